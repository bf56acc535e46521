package dataflow

import (
	"fmt"
	"strconv"
	"strings"
)

// GPU is one accelerator request: the value of Dataflow's worker_accelerator
// service option and of Beam's accelerator resource hint, which share one
// syntax: "type:T;count:N;install-nvidia-driver[;use_nvidia_mps]" (seed 002
// shows the full form).
type GPU struct {
	// Type is the accelerator type as Compute Engine spells it, for example
	// "nvidia-tesla-t4", "nvidia-l4", "nvidia-a100-80gb", "nvidia-h100-80gb".
	Type string
	// Count is the number of GPUs on each worker.
	Count int
	// InstallDriver asks Dataflow to install the NVIDIA driver on the worker
	// (install-nvidia-driver).
	InstallDriver bool
	// MPS turns on the NVIDIA Multi-Process Service (use_nvidia_mps, seed 002).
	// Only valid on a worker_accelerator with count 1: see the mps-* rules.
	MPS bool
}

const (
	optInstallDriver = "install-nvidia-driver"
	optMPS           = "use_nvidia_mps"
	// workerAcceleratorKey is the Dataflow service option that gives every
	// worker of the job a GPU (seed 002: --dataflow_service_options=worker_accelerator=...).
	workerAcceleratorKey = "worker_accelerator"
)

// Hint returns the accelerator string, "type:T;count:N;install-nvidia-driver",
// with ";use_nvidia_mps" appended where MPS is set. It is the value of Beam's
// accelerator resource hint and of the worker_accelerator service option.
func (g GPU) Hint() string {
	parts := []string{"type:" + g.Type, "count:" + strconv.Itoa(g.Count)}
	if g.InstallDriver {
		parts = append(parts, optInstallDriver)
	}
	if g.MPS {
		parts = append(parts, optMPS)
	}
	return strings.Join(parts, ";")
}

// ServiceOption returns the Dataflow service option that attaches g to every
// worker: "worker_accelerator=" + g.Hint().
func (g GPU) ServiceOption() string { return workerAcceleratorKey + "=" + g.Hint() }

// ParseAccelerator parses an accelerator string, the inverse of GPU.Hint. It
// also takes the whole service option ("worker_accelerator=type:...") and
// Beam's hint form ("accelerator=type:..."). It checks syntax only: whether the
// type and count are valid for a job is Config.Validate's business.
func ParseAccelerator(s string) (GPU, error) {
	orig := s
	// The value may come quoted as on a command line, and quoted after the
	// option name: drop quotes on both sides of the prefix.
	s = strings.Trim(strings.TrimSpace(s), `"'`)
	for _, prefix := range []string{workerAcceleratorKey + "=", "accelerator="} {
		s = strings.TrimPrefix(s, prefix)
	}
	s = strings.Trim(s, `"'`)
	if s == "" {
		return GPU{}, fmt.Errorf("accelerator %q is empty; want type:T;count:N[;install-nvidia-driver][;use_nvidia_mps]", orig)
	}
	var g GPU
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		key, val, hasVal := strings.Cut(part, ":")
		if seen[key] {
			return GPU{}, fmt.Errorf("accelerator %q gives %q twice", orig, key)
		}
		seen[key] = true
		switch {
		case key == "type" && hasVal:
			if val == "" {
				return GPU{}, fmt.Errorf("accelerator %q has an empty type", orig)
			}
			g.Type = val
		case key == "count" && hasVal:
			n, err := strconv.Atoi(val)
			if err != nil {
				return GPU{}, fmt.Errorf("accelerator %q: count %q is not an integer", orig, val)
			}
			g.Count = n
		case key == optInstallDriver && !hasVal:
			g.InstallDriver = true
		case key == optMPS && !hasVal:
			g.MPS = true
		default:
			return GPU{}, fmt.Errorf("accelerator %q: unknown part %q; want type:T, count:N, %s or %s", orig, part, optInstallDriver, optMPS)
		}
	}
	if !seen["type"] {
		return GPU{}, fmt.Errorf("accelerator %q has no type:T part", orig)
	}
	if !seen["count"] {
		return GPU{}, fmt.Errorf("accelerator %q has no count:N part", orig)
	}
	return g, nil
}
