package dataflow

import (
	"slices"
	"strconv"
	"strings"
)

// Experiment and service option names that the rules look at.
const (
	// ExperimentNoMultipleSDKContainers makes each worker start one SDK
	// container whatever its vCPU count (Dataflow's GPU best practices).
	ExperimentNoMultipleSDKContainers = "no_use_multiple_sdk_containers"
	// OptionEnablePrime turns on Dataflow Prime.
	OptionEnablePrime = "enable_prime"
)

// Config is the GPU-related part of a Dataflow job's configuration. The zero
// value is a CPU-only job with Dataflow's defaults.
type Config struct {
	// MachineType is the workers' machine type (--worker_machine_type), for
	// example "n1-standard-4", "g2-standard-8", "a2-highgpu-1g",
	// "a3-highgpu-8g". Required with WorkerAccelerator; with right fitting it
	// is the machine of the steps without hints and is not checked here.
	MachineType string
	// Region is the job's region (--region).
	Region string
	// WorkerAccelerator gives every worker of the job a GPU: the service
	// option worker_accelerator=... (whole-pipeline GPU).
	WorkerAccelerator *GPU
	// RightFitting lists the accelerator resource hints carried by the
	// pipeline's GPU steps (right fitting: only those steps get GPU workers).
	// The launcher puts them on the steps' environments; Flags does not
	// emit them.
	RightFitting []GPU
	// ContainerImage is the worker container (--sdk_container_image).
	ContainerImage string
	// NumberOfWorkerHarnessThreads is --number_of_worker_harness_threads;
	// 0 leaves Dataflow's default.
	NumberOfWorkerHarnessThreads int
	// NoUseMultipleSDKContainers adds the experiment
	// no_use_multiple_sdk_containers (one SDK process per worker, Dataflow's GPU best practices).
	NoUseMultipleSDKContainers bool
	// Prime runs the job on Dataflow Prime (service option enable_prime).
	Prime bool
	// FlexRSGoal is --flexrs_goal (FLEXRS_COST_OPTIMIZED, ...): Flexible
	// Resource Scheduling, which supports neither GPUs nor right fitting.
	FlexRSGoal string
	// Experiments are further --experiments values.
	Experiments []string
	// ServiceOptions are further --dataflow_service_options values. The GPU
	// belongs in WorkerAccelerator, not here (rule typed-accelerator).
	ServiceOptions []string
	// MinRAMBytes is the min_ram resource hint of the GPU workers. Flags
	// emits it pipeline-wide (--resource_hints=min_ram=N) when there is no
	// right fitting; with right fitting the launcher puts it on the GPU
	// steps' environment with the accelerator hint.
	MinRAMBytes int64
	// Skip names rules that Validate does not run, for a table that lags the
	// service (a region or machine type added since the cited pages were written).
	Skip []string
}

// labelled is one GPU request of a Config with the words that name it in
// errors; whole marks the worker accelerator (on the job's machine type).
type labelled struct {
	label string
	gpu   GPU
	whole bool
}

// gpus returns every GPU request of c: the worker accelerator, then the
// right-fitting hints.
func (c Config) gpus() []labelled {
	var out []labelled
	if c.WorkerAccelerator != nil {
		out = append(out, labelled{`worker_accelerator "` + c.WorkerAccelerator.Hint() + `"`, *c.WorkerAccelerator, true})
	}
	for i, g := range c.RightFitting {
		out = append(out, labelled{"right-fitting hint #" + strconv.Itoa(i+1) + ` "` + g.Hint() + `"`, g, false})
	}
	return out
}

// experiments returns the job's experiments, no_use_multiple_sdk_containers
// included where NoUseMultipleSDKContainers is set, without duplicates.
func (c Config) experiments() []string {
	out := dedupe(c.Experiments)
	if c.NoUseMultipleSDKContainers && !slices.Contains(out, ExperimentNoMultipleSDKContainers) {
		out = append(out, ExperimentNoMultipleSDKContainers)
	}
	return out
}

func (c Config) noMultipleSDKContainers() bool {
	return slices.Contains(c.experiments(), ExperimentNoMultipleSDKContainers)
}

// rightFittingMinRAM reports a min_ram resource hint: right fitting too,
// pipeline-wide (srcRightFitting).
func (c Config) rightFittingMinRAM() bool { return c.MinRAMBytes > 0 && c.WorkerAccelerator == nil }

// prime reports whether the job runs on Dataflow Prime, however it is asked for.
func (c Config) prime() bool {
	return c.Prime || slices.Contains(c.ServiceOptions, OptionEnablePrime) || slices.Contains(c.Experiments, OptionEnablePrime)
}

// serviceOptions returns the job's --dataflow_service_options values:
// worker_accelerator first, then enable_prime, then the rest.
func (c Config) serviceOptions() []string {
	var out []string
	if c.WorkerAccelerator != nil {
		out = append(out, c.WorkerAccelerator.ServiceOption())
	}
	if c.Prime {
		out = append(out, OptionEnablePrime)
	}
	for _, o := range c.ServiceOptions {
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Flags validates c and returns the Dataflow runner flags it stands for, in a
// fixed order: --region, --worker_machine_type, --sdk_container_image,
// --number_of_worker_harness_threads, --flexrs_goal, --experiments,
// --dataflow_service_options (worker_accelerator=type:T;count:N;...) and
// --resource_hints=min_ram=N. Flags that would carry Dataflow's default are
// left out. Each element is one argument; no shell quoting is needed.
func (c Config) Flags() ([]string, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var f []string
	add := func(name, value string) {
		if value != "" {
			f = append(f, "--"+name+"="+value)
		}
	}
	add("region", c.Region)
	add("worker_machine_type", c.MachineType)
	add("sdk_container_image", c.ContainerImage)
	if c.NumberOfWorkerHarnessThreads > 0 {
		add("number_of_worker_harness_threads", strconv.Itoa(c.NumberOfWorkerHarnessThreads))
	}
	add("flexrs_goal", c.FlexRSGoal)
	// Both flags are comma-separated lists in Beam Go's Dataflow runner.
	add("experiments", strings.Join(c.experiments(), ","))
	add("dataflow_service_options", strings.Join(c.serviceOptions(), ","))
	if c.MinRAMBytes > 0 && len(c.RightFitting) == 0 {
		// Beam Go's --resource_hints reads min_ram with humanize, which takes
		// a plain byte count.
		add("resource_hints", "min_ram="+strconv.FormatInt(c.MinRAMBytes, 10))
	}
	return f, nil
}

// ServiceOptionList returns the job's --dataflow_service_options values:
// worker_accelerator first, then enable_prime, then the others.
func (c Config) ServiceOptionList() []string { return c.serviceOptions() }

// ExperimentList returns the job's --experiments values, with
// no_use_multiple_sdk_containers where NoUseMultipleSDKContainers asks.
func (c Config) ExperimentList() []string { return c.experiments() }
