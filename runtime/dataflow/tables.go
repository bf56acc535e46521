package dataflow

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The data the rules check against. Every row says where it comes from.
//
// Seed 001 ("GPUs for training models": its GPU count table, its per-GPU vCPU
// and memory statements and its list of GPU regions) covers the N1 GPUs and
// the A100 40GB on A2. The brief and DESIGN.md also name L4 on G2, A100 80GB on
// A2 Ultra and H100 on A3, which no seed covers: those rows come from Compute
// Engine's GPU machine types page and are marked srcCompute.

const (
	srcSeed000 = "seed 000"
	srcSeed001 = "seed 001"
	srcSeed002 = "seed 002"
	srcDesign  = "DESIGN.md"
	// srcCompute marks data that is in no seed: Compute Engine's "GPU machine
	// types" page, https://cloud.google.com/compute/docs/gpus.
	srcCompute = "Compute Engine's GPU machine types page, not a seed"
)

// Machine families that carry NVIDIA GPUs.
const (
	FamilyN1 = "n1" // general purpose; GPUs are attached (seed 001)
	FamilyA2 = "a2" // accelerator optimised; A100s are bundled (seed 001)
	FamilyG2 = "g2" // accelerator optimised; L4s are bundled (srcCompute)
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
	// PerGPU is the vCPU and memory each GPU allows on N1 machines, where the
	// seed gives it (zero fields where it does not).
	PerGPU Limit
	// ForCount overrides PerGPU x count for particular counts (seed 001's
	// special case of 4 P100s).
	ForCount map[int]Limit
	// Source is where the row comes from.
	Source string
}

// limit returns the vCPU and memory bound of count GPUs of type t; zero fields
// mean the seeds give no bound.
func (t GPUType) limit(count int) Limit {
	if l, ok := t.ForCount[count]; ok {
		return l
	}
	return Limit{VCPUs: t.PerGPU.VCPUs * count, MemGB: t.PerGPU.MemGB * float64(count)}
}

// gpuTypes is the GPU type table.
//
// Seed 001 lists the usable types as NVIDIA_TESLA_A100, _P4, _P100, _T4 and
// _V100 (its gcloud example spells them in lower case with dashes:
// nvidia-tesla-t4). Its count table also has a K80 column, but K80 is not in
// that list of usable types, so we leave K80 out.
var gpuTypes = []GPUType{
	{Name: "nvidia-tesla-t4", Family: FamilyN1, Counts: []int{1, 2, 4}, Source: srcSeed001},
	{Name: "nvidia-tesla-p4", Family: FamilyN1, Counts: []int{1, 2, 4}, Source: srcSeed001},
	{
		Name: "nvidia-tesla-p100", Family: FamilyN1, Counts: []int{1, 2, 4}, Source: srcSeed001,
		// Seed 001: "a configuration with 4 NVIDIA Tesla P100 GPUs supports a
		// maximum of 64 vCPUs and 208 GB of memory in all regions and zones".
		ForCount: map[int]Limit{4: {VCPUs: 64, MemGB: 208}},
	},
	{
		Name: "nvidia-tesla-v100", Family: FamilyN1, Counts: []int{1, 2, 4, 8}, Source: srcSeed001,
		// Seed 001: "each NVIDIA Tesla V100 can provide up to 12 vCPUs and 76 GB
		// of memory".
		PerGPU: Limit{VCPUs: 12, MemGB: 76},
	},
	// Seed 001: A100 (40GB) only on a2-highgpu-{1,2,4,8}g and a2-megagpu-16g.
	{Name: "nvidia-tesla-a100", Family: FamilyA2, Counts: []int{1, 2, 4, 8, 16}, Source: srcSeed001},
	{Name: "nvidia-a100-80gb", Family: FamilyA2, Counts: []int{1, 2, 4, 8}, Source: srcCompute},
	{Name: "nvidia-l4", Family: FamilyG2, Counts: []int{1, 2, 4, 8}, Source: srcCompute},
	{Name: "nvidia-h100-80gb", Family: FamilyA3, Counts: []int{1, 2, 4, 8}, Source: srcCompute},
	{Name: "nvidia-h100-mega-80gb", Family: FamilyA3, Counts: []int{8}, Source: srcCompute},
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

// inSeedTable reports whether seed 001's count table has a row for m.
func (m MachineType) inSeedTable() bool { return m.GPUs != nil && m.Family == FamilyN1 }

// GB of memory per vCPU of the predefined N1 shapes. The seed gives
// n1-standard-32 as "32 vCPUs and 120 GB" (3.75 per vCPU); the highmem and
// highcpu ratios are Compute Engine's published N1 shapes (not in the seeds).
var n1MemPerVCPU = map[string]float64{"standard": 3.75, "highmem": 6.5, "highcpu": 0.9}

// n1SeedTable is seed 001's "valid numbers of GPUs for each machine type"
// table, its N1 rows. Columns in the seed: A100, K80, P4, P100, T4, V100; the
// page's rendering dropped the empty cells, so we had to place the values:
//   - rows with five values fill K80, P4, P100, T4, V100 (A100 is only on A2);
//     the two columns that reach 8 are K80 and V100, whose maximum is 8;
//   - rows with three values ("4 | 4 | 8": n1-standard-64/96,
//     n1-highmem-64/96, n1-highcpu-96) fill P4, T4, V100: P100 is out because
//     seed 001 caps 4 P100s at 64 vCPUs and 208 GB, which those shapes exceed,
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
	// Seed 001: A100 on a2-highgpu-1g/2g/4g/8g (1, 2, 4, 8) and a2-megagpu-16g
	// (16). The rules need no vCPU or memory figures for these bundled shapes
	// (the count is fixed), so the table does not carry them.
	{"a2-highgpu-1g", "nvidia-tesla-a100", srcSeed001, 1},
	{"a2-highgpu-2g", "nvidia-tesla-a100", srcSeed001, 2},
	{"a2-highgpu-4g", "nvidia-tesla-a100", srcSeed001, 4},
	{"a2-highgpu-8g", "nvidia-tesla-a100", srcSeed001, 8},
	{"a2-megagpu-16g", "nvidia-tesla-a100", srcSeed001, 16},
	{"a2-ultragpu-1g", "nvidia-a100-80gb", srcCompute, 1},
	{"a2-ultragpu-2g", "nvidia-a100-80gb", srcCompute, 2},
	{"a2-ultragpu-4g", "nvidia-a100-80gb", srcCompute, 4},
	{"a2-ultragpu-8g", "nvidia-a100-80gb", srcCompute, 8},
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

// machineTypes is the machine type table: seed 001's N1 rows and the bundled
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
		mt.Source = srcSeed001
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
		// Seed 000: GPUs supported with N1 machine types also support N1
		// custom machine types.
		return MachineType{Name: name, Family: FamilyN1, VCPUs: v, MemGB: float64(mb) / 1024, Source: srcSeed000}, true
	}
	return MachineType{}, false
}

// lookupMachine finds a machine type in the table or, for N1 shapes the seed
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

// gpuRegions is seed 001's list of the regions that provide GPUs. The seed
// adds that "some of these regions only provide certain GPU types" without
// saying which, so there is no per-type list to check; and it names no zones.
// The list is the seed's (AI Platform Training's), which may lag Dataflow's
// own: Config.Skip can switch the rule off for a region added since.
var gpuRegions = []string{
	"us-west1", "us-west2", "us-central1", "us-east1", "us-east4",
	"northamerica-northeast1", "southamerica-east1",
	"europe-west1", "europe-west2", "europe-west4",
	"asia-south1", "asia-southeast1", "asia-east1", "asia-northeast1", "asia-northeast3",
	"australia-southeast1",
}

// GPURegions returns seed 001's GPU regions.
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
