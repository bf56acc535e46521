package dataflow

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The data the rules check against. Every row says where it comes from (the
// src* constants: Dataflow's own pages first, Compute Engine's where Dataflow
// defers to it, AI Platform Training's GPU page only where nothing newer says otherwise).

// Sources of the rules and the data.
const (
	// srcGPUSupport: Dataflow's "Dataflow support for GPUs": GPUs on N1
	// machine types, custom N1 included; the GPU type and count bound a
	// worker's vCPUs and memory; for machine support per GPU it defers to
	// Compute Engine's GPU platforms (srcCompute).
	srcGPUSupport = "https://cloud.google.com/dataflow/docs/gpu/gpu-support"
	// srcBestPractices: Dataflow's GPU best practices.
	srcBestPractices = "https://cloud.google.com/dataflow/docs/gpu/develop-with-gpus"
	// srcL4: Dataflow's "Use NVIDIA L4 GPUs": L4 only on G2 machine types;
	// the L4 uses NVIDIA driver 525.0 or later and CUDA 12.0 or later.
	srcL4 = "https://cloud.google.com/dataflow/docs/gpu/use-l4-gpus"
	// srcMPS: Dataflow's "Improve performance on a shared GPU by using NVIDIA
	// MPS".
	srcMPS = "https://cloud.google.com/dataflow/docs/gpu/use-nvidia-mps"
	// srcRightFitting: Dataflow's "Right fitting": the accelerator hint's
	// syntax (type, count, machine_type, install-nvidia-driver), "right
	// fitting doesn't support FlexRS", "don't use the worker_accelerator
	// service option" with it, the machine type must go with the GPU type.
	srcRightFitting = "https://cloud.google.com/dataflow/docs/guides/right-fitting"
	// srcFlexRS: Dataflow's "Use Flexible Resource Scheduling": FlexRS
	// "doesn't support GPUs".
	srcFlexRS = "https://cloud.google.com/dataflow/docs/guides/flexrs"
	// srcPrime: Dataflow's "Use Dataflow Prime": Prime does not support
	// designating a machine type (--worker_machine_type).
	srcPrime = "https://cloud.google.com/dataflow/docs/guides/enable-dataflow-prime"
	// srcTroubleshoot: Dataflow's "Troubleshoot your Dataflow GPU job": GPU
	// jobs must use Dataflow Runner v2.
	srcTroubleshoot = "https://cloud.google.com/dataflow/docs/gpu/troubleshoot-gpus"
	// srcCompute: Compute Engine's "GPU machine types" page, which
	// Dataflow's pages defer to for the machine types of each GPU: the
	// accelerator-optimised A2, A3 and G2 types come with their GPUs
	// attached, in fixed counts; T4, P4, P100 and V100 attach to N1.
	srcCompute = "https://cloud.google.com/compute/docs/gpus"
	// srcBeamVLLM: Beam's RunInference vLLM notebook, which runs a CUDA 12
	// image on Dataflow with a T4 and install-nvidia-driver:5xx, and says
	// "make sure to enable the 5xx driver since vLLM only works with 5xx
	// drivers, not 4xx".
	srcBeamVLLM = "https://github.com/apache/beam/blob/master/examples/notebooks/beam-ml/run_inference_vllm.ipynb"
	// srcGemma: Google's Gemma sample for Dataflow, which asks for
	// type:nvidia-l4;count:1;install-nvidia-driver:5xx.
	srcGemma = "https://github.com/GoogleCloudPlatform/python-docs-samples/tree/main/dataflow/gemma"
	// srcCC: NVIDIA's compute capability of each GPU.
	srcCC = "https://developer.nvidia.com/cuda-gpus"
	// srcPTX: the kernels' PTX is built for compute_70 (cmd/beamgpu-ptx);
	// a GPU of a lower compute capability cannot load it.
	srcPTX = "cmd/beamgpu-ptx (-arch=compute_70)"
	// srcImage: the worker image is CUDA 12.4 (Dockerfile): its cuBLAS 12
	// needs a driver for CUDA 12.0, R525 or newer.
	srcImage = "Dockerfile (nvidia/cuda:12.4.1-runtime: CUDA 12 needs driver R525+)"
	// srcAIPlatform: AI Platform Training's "GPUs for training": its
	// per-GPU vCPU and memory bounds (V100, 4 x P100) and its table of GPU
	// counts per N1 machine type, which is AI Platform's and only a warning
	// here, and its GPU regions.
	srcAIPlatform = "https://cloud.google.com/ai-platform/training/docs/using-gpus"
	srcDesign     = "DESIGN.md"
)

// Machine families that carry NVIDIA GPUs.
const (
	FamilyN1 = "n1" // general purpose; GPUs are attached (srcGPUSupport, srcCompute)
	FamilyA2 = "a2" // accelerator optimised; A100s are bundled (srcCompute)
	FamilyG2 = "g2" // accelerator optimised; L4s are bundled (srcL4, srcCompute)
	FamilyA3 = "a3" // accelerator optimised; H100s are bundled (srcCompute)
)

// Limit is an upper bound on a worker's vCPUs and memory (in GB, Compute
// Engine's GB of 2^30 bytes) that a GPU configuration allows.
type Limit struct {
	VCPUs int
	MemGB float64
}

// GPUType is one row of the GPU type table.
type GPUType struct {
	// Name is the accelerator type as Dataflow and Compute Engine spell it.
	Name string
	// Family is the machine family the GPU goes with.
	Family string
	// Counts are the GPU counts a worker can have with this type, over all the
	// machine types of its family.
	Counts []int
	// PerGPU is the vCPU and memory each GPU allows on N1 machines, where a
	// source gives it (zero fields where none does).
	PerGPU Limit
	// ForCount overrides PerGPU x count for particular counts (AI Platform Training's
	// special case of 4 P100s).
	ForCount map[int]Limit
	// ComputeMajor and ComputeMinor are the GPU's compute capability
	// (srcCC): 7.5 for a T4. The kernels' PTX needs 7.0 (srcPTX).
	ComputeMajor, ComputeMinor int
	// DefaultDriverBranch is the driver branch Dataflow installs for
	// install-nvidia-driver without a version, where a source says: 525
	// for the L4 (srcL4), a 4xx one (400) for the T4 (srcBeamVLLM); 0 where
	// no source says.
	DefaultDriverBranch int
	// DefaultDriverSource is where DefaultDriverBranch comes from.
	DefaultDriverSource string
	// Source is where the row comes from.
	Source string
}

// limit returns the vCPU and memory bound of count GPUs of type t; zero fields
// mean the sources give no bound.
func (t GPUType) limit(count int) Limit {
	if l, ok := t.ForCount[count]; ok {
		return l
	}
	return Limit{VCPUs: t.PerGPU.VCPUs * count, MemGB: t.PerGPU.MemGB * float64(count)}
}

// ComputeCapability returns t's compute capability as "7.5".
func (t GPUType) ComputeCapability() string {
	return strconv.Itoa(t.ComputeMajor) + "." + strconv.Itoa(t.ComputeMinor)
}

// MinComputeMajor and MinComputeMinor are the compute capability the kernels'
// PTX is built for (srcPTX): a GPU below it cannot load the PTX.
const (
	MinComputeMajor = 7
	MinComputeMinor = 0
)

// gpuTypes is the GPU type table: the NVIDIA types of Compute Engine's GPU
// machine types page (srcCompute) that Dataflow workers take. K80 is left
// out: Compute Engine ended its support. The counts are those of the
// machine types each type comes with or attaches to (srcCompute).
var gpuTypes = []GPUType{
	{Name: "nvidia-tesla-t4", Family: FamilyN1, Counts: []int{1, 2, 4}, ComputeMajor: 7, ComputeMinor: 5,
		DefaultDriverBranch: 400, DefaultDriverSource: srcBeamVLLM, Source: srcCompute},
	{Name: "nvidia-tesla-p4", Family: FamilyN1, Counts: []int{1, 2, 4}, ComputeMajor: 6, ComputeMinor: 1, Source: srcCompute},
	{
		Name: "nvidia-tesla-p100", Family: FamilyN1, Counts: []int{1, 2, 4}, ComputeMajor: 6, ComputeMinor: 0, Source: srcCompute,
		// AI Platform Training's GPU page: "a configuration with 4 NVIDIA Tesla P100 GPUs supports a
		// maximum of 64 vCPUs and 208 GB of memory in all regions and zones".
		ForCount: map[int]Limit{4: {VCPUs: 64, MemGB: 208}},
	},
	{
		Name: "nvidia-tesla-v100", Family: FamilyN1, Counts: []int{1, 2, 4, 8}, ComputeMajor: 7, ComputeMinor: 0, Source: srcCompute,
		// AI Platform Training's GPU page: "each NVIDIA Tesla V100 can provide up to 12 vCPUs and 76 GB
		// of memory".
		PerGPU: Limit{VCPUs: 12, MemGB: 76},
	},
	{Name: "nvidia-tesla-a100", Family: FamilyA2, Counts: []int{1, 2, 4, 8, 16}, ComputeMajor: 8, ComputeMinor: 0, Source: srcCompute},
	{Name: "nvidia-a100-80gb", Family: FamilyA2, Counts: []int{1, 2, 4, 8}, ComputeMajor: 8, ComputeMinor: 0, Source: srcCompute},
	{Name: "nvidia-l4", Family: FamilyG2, Counts: []int{1, 2, 4, 8}, ComputeMajor: 8, ComputeMinor: 9,
		DefaultDriverBranch: 525, DefaultDriverSource: srcL4, Source: srcL4},
	{Name: "nvidia-h100-80gb", Family: FamilyA3, Counts: []int{1, 2, 4, 8}, ComputeMajor: 9, ComputeMinor: 0, Source: srcCompute},
	{Name: "nvidia-h100-mega-80gb", Family: FamilyA3, Counts: []int{8}, ComputeMajor: 9, ComputeMinor: 0, Source: srcCompute},
}

// GPUTypes returns a copy of the GPU type table.
func GPUTypes() []GPUType { return slices.Clone(gpuTypes) }

func lookupGPU(name string) (GPUType, bool) {
	for _, t := range gpuTypes {
		if t.Name == name {
			return t, true
		}
	}
	return GPUType{}, false
}

func knownGPUNames() string {
	names := make([]string, len(gpuTypes))
	for i, t := range gpuTypes {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// MachineType is one machine shape a GPU worker can run on.
type MachineType struct {
	Name   string
	Family string
	// VCPUs and MemGB are known for N1 shapes only (zero for the bundled
	// A2, G2 and A3 shapes, whose GPU count is fixed).
	VCPUs int
	MemGB float64
	// GPUs gives, per GPU type, the counts valid on this machine type: seed
	// 001's table for its N1 rows, the one bundled count for A2, G2 and A3.
	// Nil for N1 shapes the table does not list (custom shapes and the small
	// predefined ones): there any count of the type's Counts is accepted and
	// the per-GPU vCPU and memory limits decide.
	GPUs map[string][]int
	// Source is where the row comes from.
	Source string
}

// bundledGPU returns the GPU type an accelerator-optimised shape comes with.
func (m MachineType) bundledGPU() string {
	for t := range m.GPUs {
		if m.Family != FamilyN1 {
			return t
		}
	}
	return ""
}

// inSeedTable reports whether AI Platform Training's count table has a row for m.
func (m MachineType) inSeedTable() bool { return m.GPUs != nil && m.Family == FamilyN1 }

// GB of memory per vCPU of the predefined N1 shapes. AI Platform Training's GPU page gives
// n1-standard-32 as "32 vCPUs and 120 GB" (3.75 per vCPU); the highmem and
// highcpu ratios are Compute Engine's published N1 shapes (not in the cited pages).
var n1MemPerVCPU = map[string]float64{"standard": 3.75, "highmem": 6.5, "highcpu": 0.9}

// n1SeedTable is AI Platform Training's "valid numbers of GPUs for each machine type"
// table, its N1 rows. Columns in that page: A100, K80, P4, P100, T4, V100; the
// page's rendering dropped the empty cells, so we had to place the values:
//   - rows with five values fill K80, P4, P100, T4, V100 (A100 is only on A2);
//     the two columns that reach 8 are K80 and V100, whose maximum is 8;
//   - rows with three values ("4 | 4 | 8": n1-standard-64/96,
//     n1-highmem-64/96, n1-highcpu-96) fill P4, T4, V100: P100 is out because
//     AI Platform Training's GPU page caps 4 P100s at 64 vCPUs and 208 GB, which those shapes exceed,
//     and the last value, 8, can only be V100's column (the last one).
//
// K80 is dropped (see gpuTypes).
var n1SeedTable = []struct {
	machine            string
	p4, p100, t4, v100 []int
}{
	{"n1-standard-4", c(1, 2, 4), c(1, 2, 4), c(1, 2, 4), c(1, 2, 4, 8)},
	{"n1-standard-8", c(1, 2, 4), c(1, 2, 4), c(1, 2, 4), c(1, 2, 4, 8)},
	{"n1-standard-16", c(1, 2, 4), c(1, 2, 4), c(1, 2, 4), c(2, 4, 8)},
	{"n1-standard-32", c(2, 4), c(2, 4), c(2, 4), c(4, 8)},
	{"n1-standard-64", c(4), nil, c(4), c(8)},
	{"n1-standard-96", c(4), nil, c(4), c(8)},
	{"n1-highmem-2", c(1, 2, 4), c(1, 2, 4), c(1, 2, 4), c(1, 2, 4, 8)},
	{"n1-highmem-4", c(1, 2, 4), c(1, 2, 4), c(1, 2, 4), c(1, 2, 4, 8)},
	{"n1-highmem-8", c(1, 2, 4), c(1, 2, 4), c(1, 2, 4), c(1, 2, 4, 8)},
	{"n1-highmem-16", c(1, 2, 4), c(1, 2, 4), c(1, 2, 4), c(2, 4, 8)},
	{"n1-highmem-32", c(2, 4), c(2, 4), c(2, 4), c(4, 8)},
	{"n1-highmem-64", c(4), nil, c(4), c(8)},
	{"n1-highmem-96", c(4), nil, c(4), c(8)},
	{"n1-highcpu-16", c(1, 2, 4), c(1, 2, 4), c(1, 2, 4), c(2, 4, 8)},
	{"n1-highcpu-32", c(2, 4), c(2, 4), c(2, 4), c(4, 8)},
	{"n1-highcpu-64", c(4), c(4), c(4), c(8)},
	{"n1-highcpu-96", c(4), nil, c(4), c(8)},
}

func c(n ...int) []int { return n }

// bundled lists the accelerator-optimised machine types, each with its one
// GPU type and fixed count.
var bundled = []struct {
	machine, gpu, source string
	count                int
}{
	// A100 40GB on a2-highgpu-1g/2g/4g/8g (1, 2, 4, 8) and a2-megagpu-16g
	// (16), as AI Platform Training's GPU page says too. The rules need no vCPU or memory figures
	// for these bundled shapes (the count is fixed), so the table does not
	// carry them.
	{"a2-highgpu-1g", "nvidia-tesla-a100", srcCompute, 1},
	{"a2-highgpu-2g", "nvidia-tesla-a100", srcCompute, 2},
	{"a2-highgpu-4g", "nvidia-tesla-a100", srcCompute, 4},
	{"a2-highgpu-8g", "nvidia-tesla-a100", srcCompute, 8},
	{"a2-megagpu-16g", "nvidia-tesla-a100", srcCompute, 16},
	{"a2-ultragpu-1g", "nvidia-a100-80gb", srcCompute, 1},
	{"a2-ultragpu-2g", "nvidia-a100-80gb", srcCompute, 2},
	{"a2-ultragpu-4g", "nvidia-a100-80gb", srcCompute, 4},
	{"a2-ultragpu-8g", "nvidia-a100-80gb", srcCompute, 8},
	// The L4 only on G2 (srcL4); G2's counts are Compute Engine's.
	{"g2-standard-4", "nvidia-l4", srcCompute, 1},
	{"g2-standard-8", "nvidia-l4", srcCompute, 1},
	{"g2-standard-12", "nvidia-l4", srcCompute, 1},
	{"g2-standard-16", "nvidia-l4", srcCompute, 1},
	{"g2-standard-24", "nvidia-l4", srcCompute, 2},
	{"g2-standard-32", "nvidia-l4", srcCompute, 1},
	{"g2-standard-48", "nvidia-l4", srcCompute, 4},
	{"g2-standard-96", "nvidia-l4", srcCompute, 8},
	{"a3-highgpu-1g", "nvidia-h100-80gb", srcCompute, 1},
	{"a3-highgpu-2g", "nvidia-h100-80gb", srcCompute, 2},
	{"a3-highgpu-4g", "nvidia-h100-80gb", srcCompute, 4},
	{"a3-highgpu-8g", "nvidia-h100-80gb", srcCompute, 8},
	{"a3-megagpu-8g", "nvidia-h100-mega-80gb", srcCompute, 8},
}

// machineTypes is the machine type table: AI Platform Training's N1 rows and the bundled
// accelerator-optimised types, by name.
var machineTypes = func() map[string]MachineType {
	m := map[string]MachineType{}
	for _, r := range n1SeedTable {
		mt, ok := parseN1(r.machine)
		if !ok {
			panic("dataflow: bad N1 row " + r.machine)
		}
		mt.GPUs = map[string][]int{}
		for typ, counts := range map[string][]int{
			"nvidia-tesla-p4": r.p4, "nvidia-tesla-p100": r.p100,
			"nvidia-tesla-t4": r.t4, "nvidia-tesla-v100": r.v100,
		} {
			if counts != nil {
				mt.GPUs[typ] = counts
			}
		}
		mt.Source = srcAIPlatform
		m[r.machine] = mt
	}
	for _, b := range bundled {
		m[b.machine] = MachineType{
			Name: b.machine, Family: b.machine[:2],
			GPUs: map[string][]int{b.gpu: {b.count}}, Source: b.source,
		}
	}
	return m
}()

var (
	n1Predefined = regexp.MustCompile(`^n1-(standard|highmem|highcpu)-(\d+)$`)
	// N1 custom shapes: "n1-custom-VCPUS-MEMMB" or "custom-VCPUS-MEMMB"
	// (custom shapes default to N1), optionally with "-ext" for extended memory.
	n1Custom = regexp.MustCompile(`^(?:n1-)?custom-(\d+)-(\d+)(?:-ext)?$`)
)

// parseN1 derives an N1 shape from its name: predefined shapes carry the vCPU
// count in the name, custom ones vCPUs and MB of memory.
func parseN1(name string) (MachineType, bool) {
	if m := n1Predefined.FindStringSubmatch(name); m != nil {
		v, _ := strconv.Atoi(m[2])
		if !slices.Contains([]int{1, 2, 4, 8, 16, 32, 64, 96}, v) || (m[1] != "standard" && v == 1) {
			return MachineType{}, false
		}
		return MachineType{Name: name, Family: FamilyN1, VCPUs: v, MemGB: float64(v) * n1MemPerVCPU[m[1]], Source: srcCompute}, true
	}
	if m := n1Custom.FindStringSubmatch(name); m != nil {
		v, err1 := strconv.Atoi(m[1])
		mb, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil || v < 1 || mb < 1 {
			return MachineType{}, false
		}
		// GPUs supported with N1 machine types also support N1 custom
		// machine types (srcGPUSupport, srcBestPractices).
		return MachineType{Name: name, Family: FamilyN1, VCPUs: v, MemGB: float64(mb) / 1024, Source: srcGPUSupport}, true
	}
	return MachineType{}, false
}

// lookupMachine finds a machine type in the table or, for N1 shapes that page
// table does not list, derives it from its name.
func lookupMachine(name string) (MachineType, bool) {
	if m, ok := machineTypes[name]; ok {
		return m, true
	}
	return parseN1(name)
}

// MachineTypes returns the machine types of the table in its order: seed
// 001's N1 rows, then the A2, G2 and A3 shapes. Other N1 shapes
// (n1-standard-1, n1-highcpu-8, n1-custom-V-MB ...) are also accepted; see
// MachineType.GPUs.
func MachineTypes() []MachineType {
	out := make([]MachineType, 0, len(machineTypes))
	for _, r := range n1SeedTable {
		out = append(out, machineTypes[r.machine])
	}
	for _, b := range bundled {
		out = append(out, machineTypes[b.machine])
	}
	return out
}

func knownMachineNames() string {
	var names []string
	for _, m := range MachineTypes() {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ") + ", other predefined N1 shapes (n1-standard-1 ...) and N1 custom shapes (n1-custom-VCPUS-MEMMB)"
}

// gpuRegions are the regions known to offer GPUs to Dataflow jobs: seed
// 001's list (AI Platform Training's, which lags Dataflow's), and regions
// where public Dataflow GPU jobs run (us-west4 and europe-west3 run L4 jobs).
// No Dataflow page lists GPU regions per type, so a region outside this list
// is only a warning (rule gpu-region): Dataflow says at submission whether
// the region has the GPU.
var gpuRegions = []string{
	"us-west1", "us-west2", "us-west4", "us-central1", "us-east1", "us-east4",
	"northamerica-northeast1", "southamerica-east1",
	"europe-west1", "europe-west2", "europe-west3", "europe-west4",
	"asia-south1", "asia-southeast1", "asia-east1", "asia-northeast1", "asia-northeast3",
	"australia-southeast1",
}

// regionName is the shape of a Google Cloud region name: us-central1,
// northamerica-northeast1, europe-west10.
var regionName = regexp.MustCompile(`^[a-z]+(-[a-z]+)+[0-9]+$`)

// GPURegions returns the regions known to offer GPUs (see rule gpu-region).
func GPURegions() []string { return slices.Clone(gpuRegions) }

func fmtCounts(counts []int) string {
	s := make([]string, len(counts))
	for i, n := range counts {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

func fmtGB(gb float64) string { return fmt.Sprintf("%g GB", gb) }

// LookupMachine returns the machine type called name: a row of the table or
// an N1 shape (n1-standard-8, n1-custom-8-30720, ...).
func LookupMachine(name string) (MachineType, bool) { return lookupMachine(name) }
