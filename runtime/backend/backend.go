package backend

import (
	"fmt"
	"sort"
	"strings"
)

// Kind names an implementation of a step, or Auto for "let the selector choose".
type Kind string

// The kinds. Auto is only a request; a Decision always holds CPU, GPU or Stub.
const (
	Auto Kind = "auto"
	CPU  Kind = "cpu"
	GPU  Kind = "gpu"
	Stub Kind = "stub"
)

// ParseKind parses a --backend value.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case Auto, CPU, GPU, Stub:
		return k, nil
	}
	return "", fmt.Errorf("backend %q: want one of auto, cpu, gpu, stub", s)
}

// Hints are the resource hints a GPU step carries (Beam's resource hints:
// accelerator and min_ram). They are reported by explain and used at launch
// to place the step on GPU workers.
type Hints struct {
	// Accelerator is Beam's accelerator hint, e.g.
	// "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx".
	Accelerator string `json:"accelerator,omitempty"`
	// MinRAMBytes is the min_ram hint in bytes; zero means none.
	MinRAMBytes int64 `json:"min_ram_bytes,omitempty"`
}

// IsZero reports whether no hint is set.
func (h Hints) IsZero() bool { return h == Hints{} }

// String formats the hints as Beam's --resource_hints would, or "-" if none.
func (h Hints) String() string {
	var parts []string
	if h.Accelerator != "" {
		parts = append(parts, "accelerator="+h.Accelerator)
	}
	if h.MinRAMBytes > 0 {
		parts = append(parts, fmt.Sprintf("min_ram=%d", h.MinRAMBytes))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// Step describes one step to the selector.
type Step struct {
	// Name is the step's flag name, as used in --backend_override (e.g. "ndvi").
	Name string `json:"step"`
	// Use names one use of a step that a pipeline applies to several things
	// of its own, such as the models of a step that runs ONNX models ("" for
	// a step used once): each use gets a decision and an explain line of
	// its own ("onnx[resnet50.onnx]"); --backend_override names the step,
	// for all its uses.
	Use string `json:"use,omitempty"`
	// GPUOp is the op the GPU executor serves for this step; empty when the
	// step has no GPU implementation (I/O steps).
	GPUOp string `json:"gpu_op,omitempty"`
	// Hints are carried by the step when it runs on the GPU.
	Hints Hints `json:"hints"`
	// NoGPU, when set, says why this use cannot run on the GPU although the
	// step has a GPU op (a model with operators that have no GPU kernel):
	// auto runs it on the CPU with this reason, and gpu is an error that
	// gives it.
	NoGPU string `json:"no_gpu,omitempty"`
}

// Label is the step's name in the explain report: its name, and its use in
// brackets where it has one ("onnx[resnet50.onnx]").
func (s Step) Label() string { return label(s.Name, s.Use) }

func label(name, use string) string {
	if use == "" {
		return name
	}
	return name + "[" + use + "]"
}

// Executor tells whether GPU ops can be served in this process.
type Executor interface {
	// Available reports whether an executor with a usable device can be had,
	// and if not, why.
	Available() (ok bool, why string)
}

// OpServer is implemented by Executors that know which GPU ops they serve
// (the executor's handshake lists them). An op an executor does not serve
// runs on the CPU under auto, and is an error under gpu, with the reason;
// the other steps still use the GPU.
type OpServer interface {
	// Serves reports whether op is served, and if not, why.
	Serves(op string) (ok bool, why string)
}

// NoExecutor is the Executor of a build that cannot reach a GPU executor.
type NoExecutor struct{ Why string }

// Available implements Executor.
func (n NoExecutor) Available() (bool, string) {
	if n.Why == "" {
		return false, "no GPU executor is available to this process"
	}
	return false, n.Why
}

// Config is what the selector decides from.
type Config struct {
	// Default is the pipeline-wide request; empty means Auto.
	Default Kind
	// Overrides maps step names to a request for that step.
	Overrides map[string]Kind
	// Executor answers whether GPU ops can run; nil means NoExecutor{}.
	Executor Executor
	// Steps lists the steps the pipeline builds: an override naming another
	// step is an error at New, and so is resolving a step not listed. Empty
	// means any step (small tests).
	Steps []Step
}

// ParseOverrides parses "step=kind[,step=kind...]" as given to --backend_override.
func ParseOverrides(s string) (map[string]Kind, error) {
	out := map[string]Kind{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("backend override %q: want step=kind, e.g. ndvi=stub", part)
		}
		k, err := ParseKind(val)
		if err != nil {
			return nil, fmt.Errorf("backend override %q: %w", part, err)
		}
		out[name] = k
	}
	return out, nil
}

// FormatOverrides is the inverse of ParseOverrides, in sorted order.
func FormatOverrides(m map[string]Kind) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + string(m[n])
	}
	return strings.Join(parts, ",")
}
