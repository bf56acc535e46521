package dataflow

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Rule is one row of the rule table: a named check of a Config, with the
// source it comes from.
type Rule struct {
	// Name identifies the rule in errors and in Config.Skip.
	Name string
	// Seed is where the rule comes from (a seed under shared/seeds, or
	// DESIGN.md for the project's own rules).
	Seed string
	// Doc says the rule in one sentence.
	Doc string
	// Check returns nil where c keeps the rule, else an error saying which
	// value breaks it and how.
	Check func(c Config) error
}

// RuleError is the error of one broken rule.
type RuleError struct {
	Rule string
	Seed string
	Err  error
}

func (e *RuleError) Error() string { return e.Rule + ": " + e.Err.Error() }
func (e *RuleError) Unwrap() error { return e.Err }

// rules is the rule table. Validate runs every row, in this order.
var rules = []Rule{
	{
		Name: "gpu-type", Seed: srcSeed001,
		Doc:   "Every GPU type (worker_accelerator and right-fitting hints) is a known type.",
		Check: checkGPUType,
	},
	{
		Name: "gpu-count", Seed: srcSeed001,
		Doc:   "Every GPU count is one the type can have (seed 001: 2 or 4 T4s, but not 3).",
		Check: checkGPUCount,
	},
	{
		Name: "machine-type", Seed: srcSeed001,
		Doc:   "A worker_accelerator needs a known machine type to attach to.",
		Check: checkMachineType,
	},
	{
		Name: "gpu-machine-family", Seed: srcSeed001,
		Doc:   "The GPU type goes with the machine family: T4, P4, P100, V100 on N1; A100 on A2; L4 on G2; H100 on A3.",
		Check: checkMachineFamily,
	},
	{
		Name: "gpu-count-machine", Seed: srcSeed001,
		Doc:   "The GPU count is one seed 001's table allows on the machine type (fixed for A2, G2, A3).",
		Check: checkCountForMachine,
	},
	{
		Name: "vcpu-memory-per-gpu", Seed: srcSeed001,
		Doc:   "The GPUs provide enough vCPUs and memory for the machine type (V100: 12 vCPUs and 76 GB each; 4 P100s: 64 vCPUs and 208 GB).",
		Check: checkVCPUMemory,
	},
	{
		Name: "min-ram", Seed: srcSeed000,
		Doc:   "min_ram is not negative and fits in the memory the GPU type and count allow.",
		Check: checkMinRAM,
	},
	{
		Name: "gpu-region", Seed: srcSeed001,
		Doc:   "A job with GPUs runs in a region that provides GPUs.",
		Check: checkRegion,
	},
	{
		Name: "right-fitting-exclusive", Seed: srcDesign,
		Doc:   "Right-fitting accelerator hints are never combined with worker_accelerator.",
		Check: checkRightFittingExclusive,
	},
	{
		Name: "mps-worker-accelerator", Seed: srcSeed002,
		Doc:   "use_nvidia_mps is set on the worker_accelerator service option, not on right-fitting hints.",
		Check: checkMPSWorkerAccelerator,
	},
	{
		Name: "mps-single-gpu", Seed: srcSeed002,
		Doc:   "MPS only with count 1: it is supported only on workers with a single GPU.",
		Check: checkMPSSingleGPU,
	},
	{
		Name: "mps-multiple-sdk-containers", Seed: srcSeed002,
		Doc:   "MPS never with the experiment no_use_multiple_sdk_containers.",
		Check: checkMPSMultipleSDKContainers,
	},
	{
		Name: "mps-parallelism", Seed: srcSeed002,
		Doc:   "MPS never with --number_of_worker_harness_threads, an option that restricts parallelism.",
		Check: checkMPSParallelism,
	},
	{
		Name: "mps-prime", Seed: srcSeed002,
		Doc:   "MPS never on Dataflow Prime.",
		Check: checkMPSPrime,
	},
	{
		Name: "typed-accelerator", Seed: srcDesign,
		Doc:   "The GPU is given as Config.WorkerAccelerator, never as a raw worker_accelerator string that would escape the rules.",
		Check: checkTypedAccelerator,
	},
	{
		Name: "flag-values", Seed: srcDesign,
		Doc:   "Counts are not negative and list values are non-empty and free of the commas that separate them.",
		Check: checkFlagValues,
	},
}

// Rules returns a copy of the rule table.
func Rules() []Rule { return slices.Clone(rules) }

// Validate checks c against every rule of the table (but those named in
// c.Skip) and returns all the broken ones, each as a *RuleError, joined with
// errors.Join; nil where c keeps every rule.
func (c Config) Validate() error {
	var errs []error
	for _, s := range c.Skip {
		if !slices.ContainsFunc(rules, func(r Rule) bool { return r.Name == s }) {
			errs = append(errs, fmt.Errorf("skip names %q, which is not a rule; the rules are %s", s, ruleNames()))
		}
	}
	for _, r := range rules {
		if slices.Contains(c.Skip, r.Name) {
			continue
		}
		if err := r.Check(c); err != nil {
			errs = append(errs, &RuleError{Rule: r.Name, Seed: r.Seed, Err: err})
		}
	}
	return errors.Join(errs...)
}

func ruleNames() string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

// gib is Compute Engine's GB, in bytes.
const gib = 1 << 30

// --- the checks ---------------------------------------------------------

func checkGPUType(c Config) error {
	var errs []error
	for _, l := range c.gpus() {
		if _, ok := lookupGPU(l.gpu.Type); !ok {
			errs = append(errs, fmt.Errorf("%s: GPU type %q is not a known GPU type; the known types are %s",
				l.label, l.gpu.Type, knownGPUNames()))
		}
	}
	return errors.Join(errs...)
}

func checkGPUCount(c Config) error {
	var errs []error
	for _, l := range c.gpus() {
		t, ok := lookupGPU(l.gpu.Type)
		switch {
		case l.gpu.Count < 1:
			errs = append(errs, fmt.Errorf("%s: GPU count %d is not positive; a worker needs at least 1 GPU", l.label, l.gpu.Count))
		case ok && !slices.Contains(t.Counts, l.gpu.Count):
			// Seed 001: "you can attach 2 or 4 NVIDIA Tesla T4, but not 3".
			errs = append(errs, fmt.Errorf("%s: %d x %s is not a valid GPU count; %s allows %s (%s)",
				l.label, l.gpu.Count, t.Name, t.Name, fmtCounts(t.Counts), t.Source))
		}
	}
	return errors.Join(errs...)
}

func checkMachineType(c Config) error {
	if c.WorkerAccelerator == nil {
		// Without a worker_accelerator the machine type carries no GPU (with
		// right fitting Dataflow picks the GPU workers' machines from the
		// hints), so any machine type Dataflow accepts will do.
		return nil
	}
	if c.MachineType == "" {
		return fmt.Errorf("worker_machine_type is empty: worker_accelerator %q needs a machine type to attach to; the known machine types are %s",
			c.WorkerAccelerator.Hint(), knownMachineNames())
	}
	if _, ok := lookupMachine(c.MachineType); !ok {
		return fmt.Errorf("worker_machine_type %q is not a known GPU machine type; the known machine types are %s",
			c.MachineType, knownMachineNames())
	}
	return nil
}

// acceleratorOnMachine returns the worker accelerator's type and machine when
// both are known, for the rules that relate them.
func (c Config) acceleratorOnMachine() (GPU, GPUType, MachineType, bool) {
	if c.WorkerAccelerator == nil {
		return GPU{}, GPUType{}, MachineType{}, false
	}
	g := *c.WorkerAccelerator
	t, ok1 := lookupGPU(g.Type)
	m, ok2 := lookupMachine(c.MachineType)
	return g, t, m, ok1 && ok2
}

func familyMachines(family string) string {
	switch family {
	case FamilyN1:
		return "N1 machine types (n1-standard-*, n1-highmem-*, n1-highcpu-*, N1 custom)"
	case FamilyA2:
		return "A2 machine types (a2-highgpu-*, a2-megagpu-16g, a2-ultragpu-*)"
	case FamilyG2:
		return "G2 machine types (g2-standard-*)"
	case FamilyA3:
		return "A3 machine types (a3-highgpu-*, a3-megagpu-8g)"
	}
	return family
}

func checkMachineFamily(c Config) error {
	g, t, m, ok := c.acceleratorOnMachine()
	if !ok {
		return nil
	}
	if t.Family != m.Family {
		return fmt.Errorf("worker_accelerator type %s goes with %s, not with worker_machine_type %s (%s)",
			g.Type, familyMachines(t.Family), m.Name, t.Source)
	}
	if m.Family != FamilyN1 {
		// The accelerator-optimised shapes come with one GPU type.
		if _, carries := m.GPUs[g.Type]; !carries {
			return fmt.Errorf("worker_machine_type %s comes with %s GPUs, not %s (%s)", m.Name, m.bundledGPU(), g.Type, m.Source)
		}
	}
	return nil
}

func checkCountForMachine(c Config) error {
	g, t, m, ok := c.acceleratorOnMachine()
	if !ok || t.Family != m.Family || g.Count < 1 {
		return nil
	}
	counts, listed := m.GPUs[g.Type]
	switch {
	case m.Family != FamilyN1:
		if listed && !slices.Contains(counts, g.Count) {
			return fmt.Errorf("worker_machine_type %s comes with exactly %d %s, not count %d (%s)",
				m.Name, counts[0], g.Type, g.Count, m.Source)
		}
	case m.inSeedTable() && !listed:
		return fmt.Errorf("seed 001's table allows no %s on worker_machine_type %s", g.Type, m.Name)
	case m.inSeedTable() && !slices.Contains(counts, g.Count):
		return fmt.Errorf("%d x %s is not valid on worker_machine_type %s; seed 001's table allows %s",
			g.Count, g.Type, m.Name, fmtCounts(counts))
	}
	return nil
}

// fewestGPUs returns the smallest count of t above the current one whose
// bound covers vcpus and memGB, or 0 where none does.
func fewestGPUs(t GPUType, current, vcpus int, memGB float64) int {
	for _, n := range t.Counts {
		l := t.limit(n)
		if n > current && (l.VCPUs == 0 || vcpus <= l.VCPUs) && (l.MemGB == 0 || memGB <= l.MemGB) {
			return n
		}
	}
	return 0
}

// suggestCount says how many GPUs would do, or else what to change.
func suggestCount(t GPUType, current, vcpus int, memGB float64, otherwise string) string {
	if n := fewestGPUs(t, current, vcpus, memGB); n > 0 {
		return fmt.Sprintf("; attach at least %d", n)
	}
	return "; no count of " + t.Name + " allows that, " + otherwise
}

// checkVCPUMemory: seed 001 says each configuration must provide enough vCPUs
// and memory for the machine type, e.g. a V100 provides up to 12 vCPUs and 76
// GB, so an n1-standard-32 (32 vCPUs, 120 GB) needs at least 4 of them. Seed
// 000 says the same: the GPU type and count set the upper bound on the
// worker's vCPUs and memory.
//
// Where seed 001's count table lists the machine type with the count, the
// table wins: its n1-highmem-96 row allows 8 V100s though 8 x 76 GB = 608 GB is
// less than that shape's 624 GB (Compute Engine itself gives 78 GB per V100).
// So the per-GPU limits bite on the combinations the table does not list:
// N1 custom shapes, the small predefined ones, and counts the table refuses
// (where gpu-count-machine also reports).
func checkVCPUMemory(c Config) error {
	g, t, m, ok := c.acceleratorOnMachine()
	if !ok || m.Family != FamilyN1 || t.Family != FamilyN1 || g.Count < 1 {
		return nil
	}
	if m.inSeedTable() && slices.Contains(m.GPUs[g.Type], g.Count) {
		return nil
	}
	l := t.limit(g.Count)
	var errs []error
	if l.VCPUs > 0 && m.VCPUs > l.VCPUs {
		errs = append(errs, fmt.Errorf("worker_machine_type %s has %d vCPUs but %d x %s allow at most %d (%s)%s",
			m.Name, m.VCPUs, g.Count, t.Name, l.VCPUs, t.Source, suggestCount(t, g.Count, m.VCPUs, m.MemGB, "pick a smaller machine type")))
	}
	if l.MemGB > 0 && m.MemGB > l.MemGB {
		errs = append(errs, fmt.Errorf("worker_machine_type %s has %s of memory but %d x %s allow at most %s (%s)%s",
			m.Name, fmtGB(m.MemGB), g.Count, t.Name, fmtGB(l.MemGB), t.Source, suggestCount(t, g.Count, m.VCPUs, m.MemGB, "pick a smaller machine type")))
	}
	return errors.Join(errs...)
}

// checkMinRAM: seed 000 says the GPU type and count set the upper bound on a
// worker's memory, and that asking for more memory may require more GPUs.
// The bound is known where seed 001 gives it (V100, 4 x P100).
func checkMinRAM(c Config) error {
	if c.MinRAMBytes < 0 {
		return fmt.Errorf("min_ram %d bytes is negative", c.MinRAMBytes)
	}
	if c.MinRAMBytes == 0 {
		return nil
	}
	var errs []error
	for _, l := range c.gpus() {
		t, ok := lookupGPU(l.gpu.Type)
		if !ok || l.gpu.Count < 1 {
			continue
		}
		lim := t.limit(l.gpu.Count)
		if lim.MemGB > 0 && float64(c.MinRAMBytes) > lim.MemGB*gib {
			errs = append(errs, fmt.Errorf("%s: min_ram %d bytes (%s) is more than the %s that %d x %s allow (%s; seed 000: more memory may need more GPUs)%s",
				l.label, c.MinRAMBytes, fmtGB(math.Round(float64(c.MinRAMBytes)/gib*100)/100), fmtGB(lim.MemGB),
				l.gpu.Count, t.Name, t.Source, suggestCount(t, l.gpu.Count, 0, float64(c.MinRAMBytes)/gib, "lower min_ram")))
		}
	}
	return errors.Join(errs...)
}

// checkRegion: seed 001, "you must run your job in a region that supports
// GPUs", and its list of such regions. The seed has no per-type or per-zone
// list, so the check is the same for every type; it applies to right-fitting
// hints too, since their workers run in the job's region.
func checkRegion(c Config) error {
	if len(c.gpus()) == 0 {
		return nil
	}
	if c.Region == "" {
		return fmt.Errorf("region is empty: a job with GPUs must name a region that provides GPUs, one of %s (seed 001)",
			strings.Join(gpuRegions, ", "))
	}
	if !slices.Contains(gpuRegions, c.Region) {
		return fmt.Errorf("region %q does not provide GPUs per seed 001, whose GPU regions are %s",
			c.Region, strings.Join(gpuRegions, ", "))
	}
	return nil
}

// checkRightFittingExclusive: with right fitting only the hinted steps get GPU
// workers (seed 000); a worker_accelerator would give every worker a GPU and
// defeat it, so the project never mixes the two (DESIGN.md).
func checkRightFittingExclusive(c Config) error {
	if c.WorkerAccelerator != nil && len(c.RightFitting) > 0 {
		return fmt.Errorf("worker_accelerator %q is combined with %d right-fitting accelerator hint(s); use one or the other: right fitting gives GPUs only to the hinted steps, worker_accelerator to every worker",
			c.WorkerAccelerator.Hint(), len(c.RightFitting))
	}
	return nil
}

// checkMPSWorkerAccelerator: seed 002 turns MPS on by appending
// use_nvidia_mps to the worker_accelerator parameter of
// --dataflow_service_options; it documents no other place, so we refuse it
// on right-fitting hints.
func checkMPSWorkerAccelerator(c Config) error {
	var errs []error
	for i, g := range c.RightFitting {
		if g.MPS {
			errs = append(errs, fmt.Errorf("right-fitting hint #%d %q sets use_nvidia_mps; seed 002 enables MPS only on the worker_accelerator service option",
				i+1, g.Hint()))
		}
	}
	return errors.Join(errs...)
}

// checkMPSSingleGPU: seed 002, "MPS is only supported on Dataflow workers that
// use a single GPU" and "set the count value to 1".
func checkMPSSingleGPU(c Config) error {
	if g := c.WorkerAccelerator; g != nil && g.MPS && g.Count != 1 {
		return fmt.Errorf("worker_accelerator %q sets use_nvidia_mps with count %d; MPS is supported only on workers with a single GPU, so count must be 1 (seed 002)",
			g.Hint(), g.Count)
	}
	return nil
}

// checkMPSMultipleSDKContainers: seed 002, "do not use the pipeline option
// --experiments=no_use_multiple_sdk_containers".
func checkMPSMultipleSDKContainers(c Config) error {
	if g := c.WorkerAccelerator; g != nil && g.MPS && c.noMultipleSDKContainers() {
		return fmt.Errorf("worker_accelerator %q sets use_nvidia_mps together with the experiment %s; MPS shares the GPU among several SDK processes and must not be used with that experiment (seed 002)",
			g.Hint(), ExperimentNoMultipleSDKContainers)
	}
	return nil
}

// checkMPSParallelism: seed 002, "the pipeline cannot use pipeline options that
// restrict parallelism". It names only no_use_multiple_sdk_containers (its own
// rule above); seed 000 gives --number_of_worker_harness_threads as the other
// option that limits a worker's processing, so we choose to refuse it with MPS
// too (any value: the option exists to cap the threads).
func checkMPSParallelism(c Config) error {
	if g := c.WorkerAccelerator; g != nil && g.MPS && c.NumberOfWorkerHarnessThreads > 0 {
		return fmt.Errorf("worker_accelerator %q sets use_nvidia_mps with --number_of_worker_harness_threads=%d; MPS pipelines cannot use options that restrict parallelism (seed 002; seed 000 lists this option as one)",
			g.Hint(), c.NumberOfWorkerHarnessThreads)
	}
	return nil
}

// checkMPSPrime: seed 002, "Dataflow Prime does not support MPS".
func checkMPSPrime(c Config) error {
	if g := c.WorkerAccelerator; g != nil && g.MPS && c.prime() {
		return fmt.Errorf("worker_accelerator %q sets use_nvidia_mps on Dataflow Prime (%s); Dataflow Prime does not support MPS (seed 002)",
			g.Hint(), OptionEnablePrime)
	}
	return nil
}

func checkTypedAccelerator(c Config) error {
	var errs []error
	for _, list := range []struct {
		flag   string
		values []string
	}{{"dataflow_service_options", c.ServiceOptions}, {"experiments", c.Experiments}} {
		for _, v := range list.values {
			if strings.HasPrefix(strings.TrimSpace(v), workerAcceleratorKey) {
				errs = append(errs, fmt.Errorf("%s value %q sets the GPU as a raw string; set Config.WorkerAccelerator (ParseAccelerator reads the string) so the GPU rules apply",
					list.flag, v))
			}
		}
	}
	return errors.Join(errs...)
}

func checkFlagValues(c Config) error {
	var errs []error
	if c.NumberOfWorkerHarnessThreads < 0 {
		errs = append(errs, fmt.Errorf("number_of_worker_harness_threads %d is negative", c.NumberOfWorkerHarnessThreads))
	}
	for _, list := range []struct {
		flag   string
		values []string
	}{{"dataflow_service_options", c.ServiceOptions}, {"experiments", c.Experiments}} {
		for _, v := range list.values {
			switch {
			case strings.TrimSpace(v) == "":
				errs = append(errs, fmt.Errorf("%s has an empty value", list.flag))
			case strings.Contains(v, ","):
				errs = append(errs, fmt.Errorf("%s value %q contains a comma, which separates values; give each value as its own element", list.flag, v))
			}
		}
	}
	return errors.Join(errs...)
}
