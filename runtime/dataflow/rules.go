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
	// Source is where the rule comes from: a page of Dataflow's
	// documentation (a URL), or the project's
	// own files.
	Source string
	// Doc says the rule in one sentence.
	Doc string
	// Check returns nil where c keeps the rule, else an error saying which
	// value breaks it and how. Parts of the error made with warnf are
	// warnings: they do not refuse the configuration.
	Check func(c Config) error
}

// RuleError is one broken rule (or, with Warning, one warning of a rule).
type RuleError struct {
	Rule   string
	Source string
	// Warning marks a finding that does not refuse the configuration:
	// something the sources do not rule out, but a job may still fail on.
	Warning bool
	Err     error
}

func (e *RuleError) Error() string { return e.Rule + ": " + e.Err.Error() }
func (e *RuleError) Unwrap() error { return e.Err }

// warning is a check's finding that does not refuse the configuration.
type warning struct{ error }

// warnf makes a warning: Validate does not refuse a configuration for it,
// Warnings lists it.
func warnf(format string, args ...any) error { return warning{fmt.Errorf(format, args...)} }

// rules is the rule table. Validate runs every row, in this order.
var rules = []Rule{
	{
		Name: "gpu-type", Source: srcCompute,
		Doc:   "Every GPU type (worker_accelerator and right-fitting hints) is a GPU type Dataflow workers take.",
		Check: checkGPUType,
	},
	{
		Name: "gpu-compute-capability", Source: srcPTX + "; " + srcCC,
		Doc:   "The GPU's compute capability is at least the 7.0 the kernels' PTX is built for: P100 (6.0) and P4 (6.1) cannot load it.",
		Check: checkComputeCapability,
	},
	{
		Name: "gpu-count", Source: srcCompute,
		Doc:   "Every GPU count is one the type comes in (1, 2, 4 T4s, but not 3).",
		Check: checkGPUCount,
	},
	{
		Name: "gpu-driver", Source: srcRightFitting + "; " + srcL4 + "; " + srcBeamVLLM + "; " + srcImage,
		Doc:   "Every GPU asks for the NVIDIA driver (install-nvidia-driver), and for one that runs the CUDA 12 image (R525+): 5xx, latest, or the default where Dataflow's is R525+ (L4); a 4xx driver, or the T4's default, is refused.",
		Check: checkDriver,
	},
	{
		Name: "machine-type", Source: srcGPUSupport + "; " + srcCompute,
		Doc:   "A worker_accelerator needs a GPU machine type to attach to, and a hint's machine_type is one.",
		Check: checkMachineType,
	},
	{
		Name: "gpu-machine-family", Source: srcCompute + "; " + srcL4 + "; " + srcRightFitting,
		Doc:   "The GPU type goes with the machine family: T4, P4, P100, V100 on N1 (custom N1 too); A100 on A2; L4 on G2; H100 on A3; for worker_accelerator and for a hint's machine_type.",
		Check: checkMachineFamily,
	},
	{
		Name: "gpu-count-machine", Source: srcCompute + "; " + srcAIPlatform,
		Doc:   "The GPU count is the one an A2, G2 or A3 machine type comes with; on N1, a count AI Platform Training's GPU table does not list is a warning.",
		Check: checkCountForMachine,
	},
	{
		Name: "vcpu-memory-per-gpu", Source: srcGPUSupport + "; " + srcAIPlatform,
		Doc:   "The GPUs bound the worker's vCPUs and memory (V100: 12 vCPUs and 76 GB each; 4 P100s: 64 vCPUs and 208 GB).",
		Check: checkVCPUMemory,
	},
	{
		Name: "min-ram", Source: srcBestPractices + "; " + srcAIPlatform,
		Doc:   "min_ram is not negative and fits in the memory the GPU type and count allow.",
		Check: checkMinRAM,
	},
	{
		Name: "gpu-region", Source: srcAIPlatform + "; " + srcGPUSupport,
		Doc:   "A job with GPUs names a region; one not known to offer GPUs is a warning, not a refusal.",
		Check: checkRegion,
	},
	{
		Name: "right-fitting-exclusive", Source: srcRightFitting,
		Doc:   "Right-fitting accelerator hints are never combined with worker_accelerator (\"when you use right fitting, don't use the worker_accelerator service option\").",
		Check: checkRightFittingExclusive,
	},
	{
		Name: "right-fitting-flexrs", Source: srcRightFitting,
		Doc:   "Right fitting (resource hints) is never combined with FlexRS (\"right fitting doesn't support FlexRS\").",
		Check: checkRightFittingFlexRS,
	},
	{
		Name: "gpu-flexrs", Source: srcFlexRS,
		Doc:   "A job with GPUs does not use FlexRS (--flexrs_goal): FlexRS \"doesn't support GPUs\".",
		Check: checkGPUFlexRS,
	},
	{
		Name: "gpu-runner-v2", Source: srcTroubleshoot,
		Doc:   "A job with GPUs runs on Dataflow Runner v2: no disable_runner_v2 experiment.",
		Check: checkRunnerV2,
	},
	{
		Name: "prime-machine-type", Source: srcPrime,
		Doc:   "Dataflow Prime does not take a --worker_machine_type.",
		Check: checkPrimeMachineType,
	},
	{
		Name: "mps-worker-accelerator", Source: srcMPS,
		Doc:   "use_nvidia_mps is set on the worker_accelerator service option, not on right-fitting hints.",
		Check: checkMPSWorkerAccelerator,
	},
	{
		Name: "mps-single-gpu", Source: srcMPS,
		Doc:   "MPS only with count 1: it is supported only on workers with a single GPU.",
		Check: checkMPSSingleGPU,
	},
	{
		Name: "mps-multiple-sdk-containers", Source: srcMPS,
		Doc:   "MPS never with the experiment no_use_multiple_sdk_containers.",
		Check: checkMPSMultipleSDKContainers,
	},
	{
		Name: "mps-parallelism", Source: srcMPS + "; " + srcBestPractices,
		Doc:   "MPS never with --number_of_worker_harness_threads, an option that restricts parallelism.",
		Check: checkMPSParallelism,
	},
	{
		Name: "mps-prime", Source: srcMPS,
		Doc:   "MPS never on Dataflow Prime.",
		Check: checkMPSPrime,
	},
	{
		Name: "typed-accelerator", Source: srcDesign,
		Doc:   "In a Config built in Go, the GPU is Config.WorkerAccelerator, never a raw worker_accelerator string that would escape the rules (SetFlag parses the raw form into it).",
		Check: checkTypedAccelerator,
	},
	{
		Name: "flag-values", Source: srcDesign,
		Doc:   "Counts are not negative and list values are non-empty and free of the commas that separate them.",
		Check: checkFlagValues,
	},
}

// Rules returns a copy of the rule table.
func Rules() []Rule { return slices.Clone(rules) }

// findings runs every rule of the table (but those named in c.Skip) and
// returns what they found, refusals and warnings, each as a *RuleError.
func (c Config) findings() []*RuleError {
	var out []*RuleError
	for _, s := range c.Skip {
		if !slices.ContainsFunc(rules, func(r Rule) bool { return r.Name == s }) {
			out = append(out, &RuleError{Rule: "skip", Source: srcDesign,
				Err: fmt.Errorf("skip names %q, which is not a rule; the rules are %s", s, ruleNames())})
		}
	}
	for _, r := range rules {
		if slices.Contains(c.Skip, r.Name) {
			continue
		}
		for _, e := range leaves(r.Check(c)) {
			var w warning
			isWarning := errors.As(e, &w)
			if isWarning {
				e = w.error
			}
			out = append(out, &RuleError{Rule: r.Name, Source: r.Source, Warning: isWarning, Err: e})
		}
	}
	return out
}

// leaves splits an errors.Join of a check into its errors.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// Validate checks c against every rule of the table (but those named in
// c.Skip) and returns all the broken ones, each as a *RuleError, joined with
// errors.Join; nil where c keeps every rule. Warnings do not make it fail:
// Warnings returns them.
func (c Config) Validate() error {
	var errs []error
	for _, f := range c.findings() {
		if !f.Warning {
			errs = append(errs, f)
		}
	}
	return errors.Join(errs...)
}

// Warnings returns what the rules warn about in c: configurations the
// sources do not rule out but that a job may still fail on (a region not
// known to offer GPUs, a count AI Platform's table does not list, a driver
// Dataflow does not document). Each is a *RuleError with Warning set.
func (c Config) Warnings() []*RuleError {
	var out []*RuleError
	for _, f := range c.findings() {
		if f.Warning {
			out = append(out, f)
		}
	}
	return out
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
			errs = append(errs, fmt.Errorf("%s: GPU type %q is not a known GPU type; the known types are %s (--skip_gpu_rules=gpu-type for a type added since)",
				l.label, l.gpu.Type, knownGPUNames()))
		}
	}
	return errors.Join(errs...)
}

// checkComputeCapability: the kernels' PTX is built for compute_70
// (cmd/beamgpu-ptx); the driver JIT-compiles it for the GPU it runs on, and
// refuses a GPU below 7.0 (CUDA_ERROR_NO_BINARY_FOR_GPU): every GPU op would
// fail, and under auto every batch would run on the CPU of a GPU worker.
func checkComputeCapability(c Config) error {
	var errs []error
	for _, l := range c.gpus() {
		t, ok := lookupGPU(l.gpu.Type)
		if !ok {
			continue
		}
		if t.ComputeMajor < MinComputeMajor || t.ComputeMajor == MinComputeMajor && t.ComputeMinor < MinComputeMinor {
			errs = append(errs, fmt.Errorf("%s: %s has compute capability %s, and the GPU kernels' PTX is built for compute_%d%d (%s): it cannot load them; use nvidia-tesla-t4 (7.5), nvidia-tesla-v100 (7.0), nvidia-l4 (8.9) or newer",
				l.label, t.Name, t.ComputeCapability(), MinComputeMajor, MinComputeMinor, srcPTX))
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
			errs = append(errs, fmt.Errorf("%s: %d x %s is not a valid GPU count; %s comes in %s (%s)",
				l.label, l.gpu.Count, t.Name, t.Name, fmtCounts(t.Counts), t.Source))
		}
	}
	return errors.Join(errs...)
}

// checkDriver: without install-nvidia-driver Dataflow installs no driver and
// the container finds no libcuda ("to use NVIDIA GPUs with Dataflow, set the
// install-nvidia-driver configuration option", srcRightFitting). The worker
// image is CUDA 12 and needs R525 or newer (srcImage): 4xx cannot run it;
// Dataflow's default driver is R525+ on the L4 (srcL4) and a 4xx one on the
// T4 (Beam's vLLM notebook must ask for 5xx on a T4, srcBeamVLLM); for the
// other types no source says, which is a warning.
func checkDriver(c Config) error {
	var errs []error
	for _, l := range c.gpus() {
		g := l.gpu
		fix := fmt.Sprintf("ask for %s:%s (or :latest)", optInstallDriver, DefaultDriver)
		if !g.InstallDriver {
			errs = append(errs, fmt.Errorf("%s does not ask for the NVIDIA driver: Dataflow then installs none and the worker container has no libcuda, so every GPU op would fail; add %s:%s (%s)",
				l.label, optInstallDriver, DefaultDriver, srcRightFitting))
			continue
		}
		switch branch, exact := g.DriverBranch(); {
		case g.Driver == "latest":
		case exact && strings.HasSuffix(g.Driver, "xx"):
			if branch+99 < MinDriverBranch {
				errs = append(errs, fmt.Errorf("%s asks for a %s driver, but the worker image is CUDA 12 and needs R%d or newer (%s); %s",
					l.label, g.Driver, MinDriverBranch, srcImage, fix))
			}
		case exact:
			if branch < MinDriverBranch {
				errs = append(errs, fmt.Errorf("%s asks for driver %s, but the worker image is CUDA 12 and needs R%d or newer (%s); %s",
					l.label, g.Driver, MinDriverBranch, srcImage, fix))
			}
		default: // "" or "default": Dataflow's default driver for the type
			t, known := lookupGPU(g.Type)
			switch {
			case !known:
			case t.DefaultDriverBranch >= MinDriverBranch:
			case t.DefaultDriverBranch > 0:
				errs = append(errs, fmt.Errorf("%s asks for Dataflow's default driver, which on a %s is a %dxx one (%s); the worker image is CUDA 12 and needs R%d or newer (%s), so the executor could not start and every batch would run on the CPU of a GPU worker; %s",
					l.label, t.Name, t.DefaultDriverBranch/100, t.DefaultDriverSource, MinDriverBranch, srcImage, fix))
			default:
				errs = append(errs, warnf("%s asks for Dataflow's default driver, and no Dataflow page says which it is on a %s; the worker image needs R%d or newer (%s): %s to be sure",
					l.label, t.Name, MinDriverBranch, srcImage, fix))
			}
		}
	}
	return errors.Join(errs...)
}

func checkMachineType(c Config) error {
	var errs []error
	if c.WorkerAccelerator != nil {
		switch _, ok := lookupMachine(c.MachineType); {
		case c.MachineType == "":
			errs = append(errs, fmt.Errorf("worker_machine_type is empty: worker_accelerator %q needs a machine type to attach to; the known machine types are %s",
				c.WorkerAccelerator.Hint(), knownMachineNames()))
		case !ok:
			errs = append(errs, fmt.Errorf("worker_machine_type %q is not a known GPU machine type; the known machine types are %s",
				c.MachineType, knownMachineNames()))
		}
	}
	// Without a worker_accelerator the job's machine type carries no GPU
	// (with right fitting Dataflow picks the GPU workers' machines from the
	// hints, and a hint's machine_type wins over the job's, srcRightFitting),
	// so any machine type Dataflow accepts will do.
	for i, g := range c.RightFitting {
		if g.MachineType == "" {
			continue
		}
		if _, ok := lookupMachine(g.MachineType); !ok {
			errs = append(errs, fmt.Errorf("right-fitting hint #%d %q: machine_type %q is not a known GPU machine type; the known machine types are %s",
				i+1, g.Hint(), g.MachineType, knownMachineNames()))
		}
	}
	return errors.Join(errs...)
}

// placed is a GPU request with the machine type it runs on, where both are
// known: the worker accelerator on the job's machine type, and each
// right-fitting hint that names its machine_type.
type placed struct {
	labelled
	t GPUType
	m MachineType
}

func (c Config) placements() []placed {
	var out []placed
	for _, l := range c.gpus() {
		machine := l.gpu.MachineType
		if l.whole {
			machine = c.MachineType
		}
		t, ok1 := lookupGPU(l.gpu.Type)
		m, ok2 := lookupMachine(machine)
		if ok1 && ok2 {
			out = append(out, placed{l, t, m})
		}
	}
	return out
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
	var errs []error
	for _, p := range c.placements() {
		switch {
		case p.t.Family != p.m.Family:
			errs = append(errs, fmt.Errorf("%s: GPU type %s goes with %s, not with machine type %s (%s)",
				p.label, p.gpu.Type, familyMachines(p.t.Family), p.m.Name, p.t.Source))
		case p.m.Family != FamilyN1:
			// The accelerator-optimised shapes come with one GPU type.
			if _, carries := p.m.GPUs[p.gpu.Type]; !carries {
				errs = append(errs, fmt.Errorf("%s: machine type %s comes with %s GPUs, not %s (%s)", p.label, p.m.Name, p.m.bundledGPU(), p.gpu.Type, p.m.Source))
			}
		}
	}
	return errors.Join(errs...)
}

func checkCountForMachine(c Config) error {
	var errs []error
	for _, p := range c.placements() {
		g, m := p.gpu, p.m
		if p.t.Family != m.Family || g.Count < 1 {
			continue
		}
		counts, listed := m.GPUs[g.Type]
		switch {
		case m.Family != FamilyN1:
			if listed && !slices.Contains(counts, g.Count) {
				errs = append(errs, fmt.Errorf("%s: machine type %s comes with exactly %d %s, not count %d (%s)",
					p.label, m.Name, counts[0], g.Type, g.Count, m.Source))
			}
		// AI Platform Training's GPU table: Dataflow defers to
		// Compute Engine's vCPU and memory bounds (srcGPUSupport), which
		// the table only approximates (it refuses n1-standard-32 with one
		// T4), so a count it does not list is a warning.
		case m.inSeedTable() && !listed:
			errs = append(errs, warnf("%s: AI Platform Training's GPU table lists no %s on machine type %s; Dataflow refuses the job at submission if the GPUs cannot carry its vCPUs and memory",
				p.label, g.Type, m.Name))
		case m.inSeedTable() && !slices.Contains(counts, g.Count):
			errs = append(errs, warnf("%s: AI Platform Training's GPU table lists %s x %s on machine type %s, not %d; Dataflow refuses the job at submission if %d cannot carry its vCPUs and memory",
				p.label, fmtCounts(counts), g.Type, m.Name, g.Count, g.Count))
		}
	}
	return errors.Join(errs...)
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

// checkVCPUMemory: the GPU type and count bound a worker's vCPUs and memory
// (srcGPUSupport, srcBestPractices); the bounds known here are AI Platform Training's: a V100
// provides up to 12 vCPUs and 76 GB, so an n1-standard-32 (32 vCPUs, 120 GB)
// needs at least 4 of them; 4 P100s up to 64 vCPUs and 208 GB.
//
// Where AI Platform Training's count table lists the machine type with the count, the
// table wins: its n1-highmem-96 row allows 8 V100s though 8 x 76 GB = 608 GB is
// less than that shape's 624 GB (Compute Engine itself gives 78 GB per V100).
func checkVCPUMemory(c Config) error {
	var errs []error
	for _, p := range c.placements() {
		g, t, m := p.gpu, p.t, p.m
		if m.Family != FamilyN1 || t.Family != FamilyN1 || g.Count < 1 {
			continue
		}
		if m.inSeedTable() && slices.Contains(m.GPUs[g.Type], g.Count) {
			continue
		}
		l := t.limit(g.Count)
		if l.VCPUs > 0 && m.VCPUs > l.VCPUs {
			errs = append(errs, fmt.Errorf("%s: machine type %s has %d vCPUs but %d x %s allow at most %d (%s)%s",
				p.label, m.Name, m.VCPUs, g.Count, t.Name, l.VCPUs, srcAIPlatform, suggestCount(t, g.Count, m.VCPUs, m.MemGB, "pick a smaller machine type")))
		}
		if l.MemGB > 0 && m.MemGB > l.MemGB {
			errs = append(errs, fmt.Errorf("%s: machine type %s has %s of memory but %d x %s allow at most %s (%s)%s",
				p.label, m.Name, fmtGB(m.MemGB), g.Count, t.Name, fmtGB(l.MemGB), srcAIPlatform, suggestCount(t, g.Count, m.VCPUs, m.MemGB, "pick a smaller machine type")))
		}
	}
	return errors.Join(errs...)
}

// checkMinRAM: the GPU type and count set the upper bound on a worker's
// memory, and asking for more memory may require more GPUs (srcBestPractices,
// srcGPUSupport). The bound is known where AI Platform Training's GPU page gives it (V100, 4 x P100).
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
			errs = append(errs, fmt.Errorf("%s: min_ram %d bytes (%s) is more than the %s that %d x %s allow (%s; Dataflow's GPU best practices: more memory may need more GPUs)%s",
				l.label, c.MinRAMBytes, fmtGB(math.Round(float64(c.MinRAMBytes)/gib*100)/100), fmtGB(lim.MemGB),
				l.gpu.Count, t.Name, srcAIPlatform, suggestCount(t, l.gpu.Count, 0, float64(c.MinRAMBytes)/gib, "lower min_ram")))
		}
	}
	return errors.Join(errs...)
}

// checkRegion: a GPU job needs a region. No Dataflow page lists which region
// offers which GPU (Compute Engine's zones do, and change), so a region
// outside the known list (AI Platform Training's, with regions public Dataflow GPU jobs
// use) is only a warning; a value that is not a region name at all is an
// error. It applies to right-fitting hints too: their workers run in the
// job's region.
func checkRegion(c Config) error {
	gpus := c.gpus()
	if len(gpus) == 0 {
		return nil
	}
	switch {
	case c.Region == "":
		return fmt.Errorf("region is empty: a job with GPUs must name a region that offers them, such as %s", strings.Join(gpuRegions, ", "))
	case !regionName.MatchString(c.Region):
		return fmt.Errorf("region %q is not a Google Cloud region name (such as us-central1)", c.Region)
	case !slices.Contains(gpuRegions, c.Region):
		var types []string
		for _, l := range gpus {
			if !slices.Contains(types, l.gpu.Type) {
				types = append(types, l.gpu.Type)
			}
		}
		return warnf("region %s is not known to offer %s to Dataflow (the regions known to offer GPUs are %s); Dataflow refuses the job at submission if it does not: check https://cloud.google.com/compute/docs/gpus/gpu-regions-zones",
			c.Region, strings.Join(types, ", "), strings.Join(gpuRegions, ", "))
	}
	return nil
}

// checkRightFittingExclusive: "when you use right fitting, don't use the
// worker_accelerator service option" (srcRightFitting).
func checkRightFittingExclusive(c Config) error {
	if c.WorkerAccelerator != nil && len(c.RightFitting) > 0 {
		return fmt.Errorf("worker_accelerator %q is combined with %d right-fitting accelerator hint(s); use one or the other: right fitting gives GPUs only to the hinted steps, worker_accelerator to every worker (%s)",
			c.WorkerAccelerator.Hint(), len(c.RightFitting), srcRightFitting)
	}
	return nil
}

// checkRightFittingFlexRS: "right fitting doesn't support FlexRS"
// (srcRightFitting); a min_ram hint alone is right fitting too.
func checkRightFittingFlexRS(c Config) error {
	if c.FlexRSGoal != "" && (len(c.RightFitting) > 0 || c.rightFittingMinRAM()) {
		return fmt.Errorf("--flexrs_goal=%s is combined with right-fitting resource hints; right fitting doesn't support FlexRS (%s): drop --flexrs_goal, or run with --right_fitting=false",
			c.FlexRSGoal, srcRightFitting)
	}
	return nil
}

// checkGPUFlexRS: FlexRS "doesn't support GPUs" (srcFlexRS).
func checkGPUFlexRS(c Config) error {
	if c.FlexRSGoal != "" && c.WorkerAccelerator != nil {
		return fmt.Errorf("--flexrs_goal=%s is combined with worker_accelerator %q; FlexRS doesn't support GPUs (%s)",
			c.FlexRSGoal, c.WorkerAccelerator.Hint(), srcFlexRS)
	}
	return nil
}

// checkRunnerV2: "to use GPUs, your Dataflow job must use Dataflow Runner v2"
// (srcTroubleshoot). Beam's Go runner refuses these experiments for every
// job; for a GPU job the reason is the GPU.
func checkRunnerV2(c Config) error {
	if len(c.gpus()) == 0 {
		return nil
	}
	for _, e := range c.experiments() {
		if strings.HasPrefix(e, "disable_runner_v2") || e == "disable_prime_runner_v2" {
			return fmt.Errorf("experiment %s turns off Dataflow Runner v2, which GPU jobs need (%s)", e, srcTroubleshoot)
		}
	}
	return nil
}

// checkPrimeMachineType: Dataflow Prime does not support designating a
// machine type with --worker_machine_type (srcPrime).
func checkPrimeMachineType(c Config) error {
	if c.prime() && c.MachineType != "" {
		return fmt.Errorf("worker_machine_type %s is set on Dataflow Prime (%s), which does not support designating machine types (%s); leave it out, or give GPUs as right-fitting hints",
			c.MachineType, OptionEnablePrime, srcPrime)
	}
	return nil
}

// checkMPSWorkerAccelerator: Dataflow turns MPS on by appending
// use_nvidia_mps to the worker_accelerator parameter of
// --dataflow_service_options (srcMPS); it documents no other place, so we
// refuse it on right-fitting hints.
func checkMPSWorkerAccelerator(c Config) error {
	var errs []error
	for i, g := range c.RightFitting {
		if g.MPS {
			errs = append(errs, fmt.Errorf("right-fitting hint #%d %q sets use_nvidia_mps; Dataflow enables MPS only on the worker_accelerator service option (%s)",
				i+1, g.Hint(), srcMPS))
		}
	}
	return errors.Join(errs...)
}

// checkMPSSingleGPU: "MPS is supported only on Dataflow workers that use a
// single GPU" and "set the count to 1" (srcMPS).
func checkMPSSingleGPU(c Config) error {
	if g := c.WorkerAccelerator; g != nil && g.MPS && g.Count != 1 {
		return fmt.Errorf("worker_accelerator %q sets use_nvidia_mps with count %d; MPS is supported only on workers with a single GPU, so count must be 1 (%s)",
			g.Hint(), g.Count, srcMPS)
	}
	return nil
}

// checkMPSMultipleSDKContainers: "don't use the pipeline option
// --experiments=no_use_multiple_sdk_containers" (srcMPS).
func checkMPSMultipleSDKContainers(c Config) error {
	if g := c.WorkerAccelerator; g != nil && g.MPS && c.noMultipleSDKContainers() {
		return fmt.Errorf("worker_accelerator %q sets use_nvidia_mps together with the experiment %s; MPS shares the GPU among several SDK processes and must not be used with that experiment (%s)",
			g.Hint(), ExperimentNoMultipleSDKContainers, srcMPS)
	}
	return nil
}

// checkMPSParallelism: "the pipeline can't use pipeline options that restrict
// parallelism" (srcMPS). It names only no_use_multiple_sdk_containers (its own
// rule above); the GPU best practices give
// --number_of_worker_harness_threads as the other option that limits a
// worker's processing, so we choose to refuse it with MPS too (any value: the
// option exists to cap the threads).
func checkMPSParallelism(c Config) error {
	if g := c.WorkerAccelerator; g != nil && g.MPS && c.NumberOfWorkerHarnessThreads > 0 {
		return fmt.Errorf("worker_accelerator %q sets use_nvidia_mps with --number_of_worker_harness_threads=%d; MPS pipelines cannot use options that restrict parallelism (%s; %s lists this option as one)",
			g.Hint(), c.NumberOfWorkerHarnessThreads, srcMPS, srcBestPractices)
	}
	return nil
}

// checkMPSPrime: "Dataflow Prime doesn't support MPS" (srcMPS).
func checkMPSPrime(c Config) error {
	if g := c.WorkerAccelerator; g != nil && g.MPS && c.prime() {
		return fmt.Errorf("worker_accelerator %q sets use_nvidia_mps on Dataflow Prime (%s); Dataflow Prime does not support MPS (%s)",
			g.Hint(), OptionEnablePrime, srcMPS)
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
				errs = append(errs, fmt.Errorf("%s value %q sets the GPU as a raw string in Config.%s; set Config.WorkerAccelerator (Config.SetFlag parses the raw form into it) so the GPU rules apply",
					list.flag, v, map[string]string{"dataflow_service_options": "ServiceOptions", "experiments": "Experiments"}[list.flag]))
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
