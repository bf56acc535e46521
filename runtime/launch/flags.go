package launch

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/dataflow"
)

// Flags are the launcher's own flags. The rest of a launch is configured
// with Beam's flags, which the launcher reads: --runner, --endpoint,
// --environment_type, --project, --region, --staging_location,
// --worker_machine_type, --sdk_container_image, --experiments,
// --dataflow_service_options, --number_of_worker_harness_threads,
// --resource_hints, --job_name, ...
type Flags struct {
	// PlanOut is --plan_out: write the plan into this directory and run
	// nothing.
	PlanOut string
	// RightFitting is --right_fitting: move hinted steps to their own
	// environments. Auto (the default) does so where environments can be
	// different workers (Dataflow, a portable job server) and not on prism
	// started in this process, where every environment runs in the same
	// loopback worker and the fusion breaks only cost memory (a full-size
	// Landsat scene held 24 GB behind them, 0.23 GB without).
	RightFitting Switch
	// WorkerAccelerator is --worker_accelerator: every Dataflow worker gets
	// this GPU (whole-pipeline GPU); steps then carry no hints.
	WorkerAccelerator string
	// Accelerator is --gpu_accelerator: the accelerator hint of the
	// right-fitted GPU steps, instead of the one they declare.
	Accelerator string
	// GPUProcesses is --gpu_processes: SDK processes sharing one GPU on a
	// worker (0: derived from the environment and the machine type).
	GPUProcesses int
	// SkipRules is --skip_gpu_rules: Dataflow GPU rules not to check,
	// comma separated (for a region or machine newer than the tables).
	SkipRules string
	// CPUProfile is --cpuprofile: write a Go CPU profile of the run to this
	// file (on prism the SDK workers run in this process, so it covers
	// the steps; on a remote runner only the submission).
	CPUProfile string
	// Rehearse is --rehearse=ROOT: run on prism as on Dataflow's workers,
	// each environment (right fitting on) a worker process started by
	// Beam's boot loader from the worker image's layout under ROOT
	// (containers/build-rehearsal.sh), with the image's environment
	// (containers/worker.env); or --rehearse=image:IMAGE, the worker image
	// itself in prism's DOCKER environments.
	Rehearse string
	// ExecutorOps is --executor_ops=FILE: the GPU ops the workers' image's
	// executor serves (the list its build wrote, make image:
	// out/image/executor-ops.txt, or its label org.beamgpu.executor.ops).
	// Steps planned on the GPU whose op it lacks are refused under
	// --backend=gpu and run on the CPU under auto.
	ExecutorOps string

	imageOps *refusals // the ops the image does not serve that steps asked for
}

// Switch is a flag that is on, off, or left to the launcher (auto, the zero
// value). It takes true, false, auto, or no value (on).
type Switch int8

// The Switch values.
const (
	Auto Switch = iota
	On
	Off
)

func (s Switch) String() string { return [...]string{"auto", "true", "false"}[s] }

// Set implements flag.Value.
func (s *Switch) Set(v string) error {
	if v == "auto" {
		*s = Auto
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q: want true, false or auto", v)
	}
	*s = map[bool]Switch{true: On, false: Off}[b]
	return nil
}

// IsBoolFlag lets the flag be given alone (--right_fitting means true).
func (s *Switch) IsBoolFlag() bool { return true }

// rightFitting says whether right fitting applies for target t.
func (f Flags) rightFitting(t Target) bool {
	switch f.RightFitting {
	case On:
		return true
	case Off:
		return false
	}
	return t != Prism || f.Rehearse != ""
}

// Register adds the launcher's flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.PlanOut, "plan_out", "",
		"write the launch plan into this directory and run nothing: plan.txt (a summary: environments, steps, hints, service options, machine, image), plan.json, pipeline.pb and pipeline.txtpb (the pipeline proto) and, for --runner=dataflow, job.json (the Dataflow job); works offline and holds no credentials")
	fs.Var(&f.RightFitting, "right_fitting",
		"run GPU steps in their own environment carrying their resource hints (accelerator, min_ram), after a fusion break, so that only their stages get GPU workers: true, false (every step on the default environment, hints stripped) or auto: true on Dataflow and portable job servers, false on prism in this process, where it would only hold the data at each fusion break in memory (default auto)")
	fs.StringVar(&f.WorkerAccelerator, "worker_accelerator", "",
		"whole-pipeline GPU on Dataflow: every worker gets this GPU, as type:T;count:N;install-nvidia-driver:5xx[;use_nvidia_mps] (becomes --dataflow_service_options=worker_accelerator=..., which is also accepted as such); steps then carry no hints. Quote it in a shell: ';' ends a command")
	fs.StringVar(&f.Accelerator, "gpu_accelerator", "",
		"accelerator hint of the right-fitted GPU steps, type:T;count:N[;machine_type:M];install-nvidia-driver:5xx (empty: the one each step declares)")
	fs.IntVar(&f.GPUProcesses, "gpu_processes", 0,
		"SDK processes sharing one GPU on a worker, which divide its memory and concurrent batches among their executors (0: derived: 1 for a Go SDK container, which is multi-core)")
	fs.StringVar(&f.CPUProfile, "cpuprofile", "",
		"write a CPU profile of the run to this file, for go tool pprof (on prism the steps run in this process, so it shows where a run's time goes)")
	fs.StringVar(&f.Rehearse, "rehearse", "",
		"rehearse the Dataflow workers on prism: ROOT, a directory laid out as the worker image (containers/build-rehearsal.sh --out ROOT; make rehearse), runs each environment (right fitting on) as a worker process started by Beam's boot loader with the image's environment (containers/worker.env), which retrieves the worker binary through prism's artifact service (the workers run in directories of their own: relative input and output paths are made absolute first); image:IMAGE runs the worker image instead (prism's DOCKER environments; needs docker)")
	fs.StringVar(&f.ExecutorOps, "executor_ops", "",
		"a file listing the GPU ops the worker image's executor serves: op names (raster.toa_ndvi, clipstep.clip) one a line or comma separated, '#' starting a comment line. make image writes it to out/image/executor-ops.txt; without Docker, containers/executor-ops.sh [EXECUTOR_PKG] > ops.txt prints it for an executor's main package (default ./pipelines/beamgpu-executor; no GPU or CUDA needed); for an image built elsewhere, save its label org.beamgpu.executor.ops (docker inspect). A step planned on the GPU whose op it lacks is refused under --backend=gpu and runs on the CPU under auto. For Dataflow, portable runners and --rehearse=image:IMAGE")
	fs.StringVar(&f.SkipRules, "skip_gpu_rules", "",
		"comma-separated Dataflow GPU rules not to check, for a region or machine type newer than the rule tables (see runtime/dataflow)")
}

// Target is where a pipeline goes.
type Target string

// The targets.
const (
	Prism    Target = "prism"    // Beam's local runner, in this process
	Dataflow Target = "dataflow" // Google Cloud Dataflow
	Portable Target = "portable" // any portable job server, by --endpoint
)

// Runner returns the target named by Beam's --runner ("" is prism).
func Runner() (Target, error) {
	switch r := strings.ToLower(*runners.Runner); r {
	case "", "prism", "prismrunner":
		return Prism, nil
	case "dataflow", "dataflowrunner":
		return Dataflow, nil
	case "portable", "universal", "portablerunner", "flink", "spark":
		return Portable, nil
	default:
		return "", fmt.Errorf("--runner=%s: the launcher runs prism (the default), dataflow, or portable/universal/flink/spark with --endpoint", *runners.Runner)
	}
}

// remote reports whether the target's workers are other processes, started
// from a container (Dataflow, or a portable runner whose environment is not
// loopback).
func remote(t Target) bool {
	switch t {
	case Dataflow:
		return true
	case Portable:
		env := strings.ToLower(*jobopts.EnvironmentType)
		return env != "loopback"
	}
	return false
}

// Executor returns what the backend selector should ask about GPUs: local
// (the executor this process would start) when the pipeline runs here, and
// for remote workers whether the job is configured for GPUs: the workers
// then run GPU ops in the worker container's executor. A Dataflow job has
// GPUs with --worker_accelerator or a custom --sdk_container_image (the
// beamgpu worker image; Dataflow's default image has no executor).
func (f *Flags) Executor(local backend.Executor) (backend.Executor, error) {
	t, err := Runner()
	if err != nil {
		return nil, err
	}
	if r, err := f.rehearsal(); err != nil || r != nil {
		if err != nil {
			return nil, err
		}
		return r.executor(f, local)
	}
	if !remote(t) {
		return local, nil
	}
	if t == Dataflow && !f.wholePipelineGPU() && flagValue("sdk_container_image") == "" {
		return backend.NoExecutor{Why: "Dataflow's default container has no GPU executor: pass --sdk_container_image with the beamgpu worker image (make image)"}, nil
	}
	return f.imageExecutor()
}

type remoteExecutor struct{}

func (remoteExecutor) Available() (bool, string) {
	return true, "the workers run GPU ops in the worker container's executor"
}

// gpuConfig is the typed Dataflow GPU configuration of the flags, without
// the right-fitting hints the steps declare (known once the pipeline is
// marshalled). Beam's Dataflow flags are read as Dataflow's pages write
// them (dataflow.Config.SetFlag): a raw
// --dataflow_service_options=worker_accelerator=... becomes the typed worker
// accelerator, as --worker_accelerator does.
func (f *Flags) gpuConfig() (dataflow.Config, error) {
	c := dataflow.Config{Skip: splitList(f.SkipRules)}
	for _, name := range []string{"region", "worker_machine_type", "machine_type", "sdk_container_image",
		"number_of_worker_harness_threads", "flexrs_goal", "experiments", "dataflow_service_options"} {
		if v := flagValue(name); v != "" && v != "0" {
			if err := c.SetFlag(name, v); err != nil {
				return c, err
			}
		}
	}
	if f.WorkerAccelerator != "" {
		g, err := dataflow.ParseAccelerator(f.WorkerAccelerator)
		if err != nil {
			return c, fmt.Errorf("--worker_accelerator: %w", err)
		}
		if c.WorkerAccelerator != nil && *c.WorkerAccelerator != g {
			return c, fmt.Errorf("--worker_accelerator=%s and --dataflow_service_options=%s give two GPUs; give one", f.WorkerAccelerator, c.WorkerAccelerator.ServiceOption())
		}
		c.WorkerAccelerator = &g
	}
	if f.Accelerator != "" {
		g, err := dataflow.ParseAccelerator(f.Accelerator)
		if err != nil {
			return c, fmt.Errorf("--gpu_accelerator: %w", err)
		}
		c.RightFitting = append(c.RightFitting, g)
	}
	// A pipeline-wide accelerator hint is right fitting's syntax too.
	for _, h := range jobopts.ResourceHints {
		if k, _, _ := strings.Cut(h, "="); k == "accelerator" || k == "min_ram" {
			if err := c.SetFlag("resource_hints", h); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

// wholePipelineGPU reports whether every Dataflow worker gets the GPU: a
// --worker_accelerator, or the raw worker_accelerator service option.
func (f *Flags) wholePipelineGPU() bool {
	if f.WorkerAccelerator != "" {
		return true
	}
	c, err := f.gpuConfig()
	return err == nil && c.WorkerAccelerator != nil
}

// Validate checks the flags before a pipeline is constructed: the runner
// is one the launcher knows, and for Dataflow the GPU configuration keeps
// every rule of runtime/dataflow and the container image is one Dataflow
// can pull. Right-fitting hints are checked again once the pipeline is
// marshalled.
func (f *Flags) Validate() error {
	t, err := Runner()
	if err != nil {
		return err
	}
	if f.GPUProcesses < 0 {
		return fmt.Errorf("--gpu_processes=%d: want 0 (derive) or a positive count", f.GPUProcesses)
	}
	if t == Portable && *jobopts.Endpoint == "" {
		return fmt.Errorf("--runner=%s needs --endpoint=HOST:PORT of the job server", *runners.Runner)
	}
	if f.Rehearse != "" {
		if t != Prism || *jobopts.Endpoint != "" {
			return fmt.Errorf("--rehearse runs the pipeline on a prism started here: it takes neither --runner=%s nor --endpoint", *runners.Runner)
		}
		if *jobopts.EnvironmentType != "" {
			return fmt.Errorf("--rehearse sets the environments itself (PROCESS, or DOCKER for image:IMAGE): drop --environment_type=%s", *jobopts.EnvironmentType)
		}
		if _, err := f.rehearsal(); err != nil {
			return err
		}
	}
	if f.ExecutorOps != "" {
		if !remote(t) && !strings.HasPrefix(f.Rehearse, rehearsalImagePrefix) {
			return fmt.Errorf("--executor_ops checks the executor of workers started from an image (--runner=dataflow, a portable runner, --rehearse=image:IMAGE); here the executor is probed itself")
		}
		if _, err := ReadExecutorOps(f.ExecutorOps); err != nil {
			return err
		}
	}
	if f.WorkerAccelerator != "" && t != Dataflow {
		return fmt.Errorf("--worker_accelerator is a Dataflow service option; --runner=%s does not take it", t)
	}
	if t != Dataflow {
		return nil
	}
	c, err := f.gpuConfig()
	if err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("invalid Dataflow GPU configuration:\n%w", err)
	}
	return CheckImage(c.ContainerImage)
}

func flagValue(name string) string {
	if fl := flag.Lookup(name); fl != nil {
		return fl.Value.String()
	}
	return ""
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// RemoteWorkers reports whether the pipeline's workers will be other
// processes, started from a container (Dataflow, or a portable runner whose
// environment is not loopback), rather than this process.
func RemoteWorkers() bool {
	t, err := Runner()
	return err == nil && remote(t)
}

// WorkerPath checks that a path a pipeline hands its workers can be read
// (or written) by them: any path when they run in this process, else only a
// URL such as gs://bucket/x, not a path on this machine. Plans are not
// checked: nothing runs. flag names the flag in the error.
//
// In a rehearsal (--rehearse) the workers are processes on this machine,
// each in a working directory of its own (as a container has its own
// filesystem): a relative path is made absolute here, against this
// process's working directory, and the flag set to it, so that the
// workers read and write where an in-process run would.
func (f *Flags) WorkerPath(flagName, path string) error {
	if strings.HasPrefix(f.Rehearse, rehearsalImagePrefix) && !strings.Contains(path, "://") {
		// Prism starts the image's containers with no mounts
		// (internal/environments.go): they see none of this machine's files.
		if path == "" {
			return fmt.Errorf("--%s: the workers of --rehearse=%s are containers that cannot read this machine's files (the embedded default data included); pass a gs:// path", flagName, f.Rehearse)
		}
		return fmt.Errorf("--%s=%s: the workers of --rehearse=%s are containers that cannot read a path on this machine; pass a gs:// path", flagName, path, f.Rehearse)
	}
	if f.Rehearse != "" && path != "" && !strings.Contains(path, "://") && !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("--%s=%s: %w", flagName, path, err)
		}
		if err := flag.Set(flagName, abs); err != nil {
			return fmt.Errorf("--%s=%s: %w", flagName, path, err)
		}
		return nil
	}
	t, err := Runner()
	if err != nil || !remote(t) || f.PlanOut != "" || strings.Contains(path, "://") {
		return err
	}
	if path == "" {
		return fmt.Errorf("--%s: the %s workers cannot read this machine's files (the embedded default data included); pass a gs:// path", flagName, t)
	}
	return fmt.Errorf("--%s=%s: the %s workers cannot read a path on this machine; pass a gs:// path", flagName, path, t)
}
