package dataflow

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GPU is one accelerator request: the value of Dataflow's worker_accelerator
// service option and of Beam's accelerator resource hint, which share one
// syntax (Dataflow's right-fitting page, srcRightFitting):
//
//	type:GPU_TYPE;count:GPU_COUNT[;machine_type:MACHINE_TYPE][;install-nvidia-driver[:VERSION]][;use_nvidia_mps]
type GPU struct {
	// Type is the accelerator type as Compute Engine spells it, for example
	// "nvidia-tesla-t4", "nvidia-l4", "nvidia-a100-80gb", "nvidia-h100-80gb".
	Type string
	// Count is the number of GPUs on each worker.
	Count int
	// MachineType is the machine_type:M part of a right-fitting accelerator
	// hint: the machine the hinted steps' workers get, which must go with
	// the GPU type (srcRightFitting). Empty: Dataflow chooses.
	MachineType string
	// InstallDriver asks Dataflow to install the NVIDIA driver on the worker
	// (install-nvidia-driver). Without it the container has no libcuda.
	InstallDriver bool
	// Driver is the driver asked for with install-nvidia-driver:VERSION:
	// "" (Dataflow's default driver), "default", "latest", a branch such as
	// "5xx" or "R535", or an exact version such as "535.104.05". Only
	// meaningful with InstallDriver.
	Driver string
	// MPS turns on the NVIDIA Multi-Process Service (use_nvidia_mps,
	// srcMPS). Only valid on a worker_accelerator with count 1: see the
	// mps-* rules.
	MPS bool
}

const (
	optInstallDriver = "install-nvidia-driver"
	optMPS           = "use_nvidia_mps"
	optMachineType   = "machine_type"
	// workerAcceleratorKey is the Dataflow service option that gives every
	// worker of the job a GPU: --dataflow_service_options=worker_accelerator=...
	workerAcceleratorKey = "worker_accelerator"
)

// DefaultDriver is the driver version the project's GPU hints and examples
// ask for: the 5xx branch, which the worker image needs (CUDA 12: cuBLAS 12
// needs driver R525 or newer; see MinDriverBranch). Beam's vLLM notebook and
// Google's Gemma sample ask for the same on Dataflow (srcBeamVLLM, srcGemma).
const DefaultDriver = "5xx"

// MinDriverBranch is the oldest NVIDIA driver branch that runs the worker
// image: its CUDA 12.4 runtime and cuBLAS 12 need a driver for CUDA 12.0 or
// newer, which is R525 (Dockerfile; NVIDIA's CUDA compatibility table).
const MinDriverBranch = 525

// driverForms are the driver versions install-nvidia-driver:VERSION takes:
// default, latest, a branch (5xx, R535) or an exact version (535.104.05).
var driverForms = regexp.MustCompile(`^(default|latest|[1-9][0-9]?xx|[Rr][1-9][0-9]{2}|[1-9][0-9]{2}(\.[0-9]+){0,2})$`)

// Hint returns the accelerator string, "type:T;count:N", then
// ";machine_type:M" where MachineType is set, ";install-nvidia-driver[:V]"
// where InstallDriver is, and ";use_nvidia_mps" where MPS is: the order of
// Dataflow's right-fitting page. It is the value of Beam's accelerator
// resource hint and of the worker_accelerator service option.
func (g GPU) Hint() string {
	parts := []string{"type:" + g.Type, "count:" + strconv.Itoa(g.Count)}
	if g.MachineType != "" {
		parts = append(parts, optMachineType+":"+g.MachineType)
	}
	if g.InstallDriver {
		d := optInstallDriver
		if g.Driver != "" {
			d += ":" + g.Driver
		}
		parts = append(parts, d)
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
// Beam's hint form ("accelerator=type:..."), quoted or not, as Dataflow's
// pages write them. It checks syntax only: whether the type, count, machine
// and driver are valid for a job is Config.Validate's business.
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
		return GPU{}, fmt.Errorf("accelerator %q is empty; want type:T;count:N[;machine_type:M][;install-nvidia-driver[:VERSION]][;use_nvidia_mps]", orig)
	}
	if strings.ContainsAny(s, `"'`) {
		return GPU{}, fmt.Errorf("accelerator %q has a quote inside it; quote the whole value or nothing", orig)
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
		case key == optMachineType && hasVal:
			if val == "" {
				return GPU{}, fmt.Errorf("accelerator %q has an empty machine_type", orig)
			}
			g.MachineType = val
		case key == optInstallDriver:
			g.InstallDriver = true
			if hasVal {
				if !driverForms.MatchString(val) {
					return GPU{}, fmt.Errorf("accelerator %q: driver version %q is not one Dataflow installs; want %s, %s:latest, %s:5xx (a branch) or %s:535.104.05 (an exact version)",
						orig, val, optInstallDriver, optInstallDriver, optInstallDriver, optInstallDriver)
				}
				g.Driver = val
			}
		case key == optMPS && !hasVal:
			g.MPS = true
		default:
			return GPU{}, fmt.Errorf("accelerator %q: unknown part %q; want type:T, count:N, machine_type:M, %s[:VERSION] or %s", orig, part, optInstallDriver, optMPS)
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

// DriverBranch returns the driver branch that g's install-nvidia-driver
// version guarantees (535 for "535.104.05" and "R535", 500 for "5xx", 400 for
// "4xx"), and false where the version names none: "", "default" (Dataflow's
// default driver for the GPU type) and "latest".
func (g GPU) DriverBranch() (int, bool) {
	v := strings.TrimPrefix(strings.TrimPrefix(g.Driver, "R"), "r")
	if n, ok := strings.CutSuffix(v, "xx"); ok {
		d, err := strconv.Atoi(n)
		return d * 100, err == nil
	}
	major, _, _ := strings.Cut(v, ".")
	d, err := strconv.Atoi(major)
	return d, err == nil && len(major) == 3
}
