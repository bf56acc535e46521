package gke

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/runtime/dataflow"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Where the names below come from.
const (
	srcFlexStartTPU = "https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training-tpu"
	// srcGKE marks what the flex-start TPU guide (a TPU page) does not cover: GKE's GPU
	// documentation (cloud.google.com/kubernetes-engine/docs/how-to/gpus).
	srcGKE = "GKE docs, not the flex-start TPU guide"
)

// Node labels and resource names.
const (
	// LabelFlexStart selects flex-start nodes: the flex-start TPU guide's node selector
	// cloud.google.com/gke-flex-start: "true".
	LabelFlexStart = "cloud.google.com/gke-flex-start"
	// LabelTPUAccelerator and LabelTPUTopology select a TPU slice (GKE's flex-start TPU guide).
	LabelTPUAccelerator = "cloud.google.com/gke-tpu-accelerator"
	LabelTPUTopology    = "cloud.google.com/gke-tpu-topology"
	// LabelGPUAccelerator selects GPU nodes by accelerator type (srcGKE).
	LabelGPUAccelerator = "cloud.google.com/gke-accelerator"
	// ResourceTPU is the TPU chips resource (GKE's flex-start TPU guide); ResourceGPU the GPU
	// one (srcGKE).
	ResourceTPU = "google.com/tpu"
	ResourceGPU = "nvidia.com/gpu"
)

// Kind says whether an accelerator is a TPU or a GPU.
type Kind string

// The accelerator kinds.
const (
	TPU Kind = "tpu"
	GPU Kind = "gpu"
)

// acceleratorType is one row of the accelerator table.
type acceleratorType struct {
	name   string
	kind   Kind
	source string
	// TPUs only (srcGKE, GKE's TPU machine type table): machine is the
	// machine type with %d for the chips per VM, chips the chips per VM
	// its machine types have, dims the topology's dimensions (2 for v5e and
	// v6e, AxB; 3 for v4 and v5p, AxBxC).
	machine string
	chips   []int
	dims    int
}

// accelerators is the table of accelerator types the package knows: the GKE
// node label values.
var accelerators = []acceleratorType{
	// The flex-start TPU guide gives these two as examples of ACCELERATOR_TYPE (their machine
	// types, chips per VM and topology shapes are GKE's, srcGKE).
	{"tpu-v4-podslice", TPU, srcFlexStartTPU, "ct4p-hightpu-%dt", []int{4}, 3},
	{"tpu-v5-lite-podslice", TPU, srcFlexStartTPU, "ct5lp-hightpu-%dt", []int{1, 4, 8}, 2},
	// The flex-start TPU guide uses ct6e-standard-4t (TPU Trillium) without naming its
	// accelerator type; GKE's is tpu-v6e-slice. v5p is tpu-v5p-slice.
	{"tpu-v5p-slice", TPU, srcGKE, "ct5p-hightpu-%dt", []int{4}, 3},
	{"tpu-v6e-slice", TPU, srcGKE, "ct6e-standard-%dt", []int{1, 4, 8}, 2},
	// The flex-start TPU guide covers TPUs only. GKE labels GPU nodes with the Compute Engine
	// accelerator type; these are types of the project's Dataflow GPU table
	// (runtime/dataflow), which also gives their allowed counts per node and
	// the machine types that carry them.
	{name: "nvidia-tesla-t4", kind: GPU, source: srcGKE},
	{name: "nvidia-tesla-v100", kind: GPU, source: srcGKE},
	{name: "nvidia-l4", kind: GPU, source: srcGKE},
	{name: "nvidia-tesla-a100", kind: GPU, source: srcGKE},
	{name: "nvidia-a100-80gb", kind: GPU, source: srcGKE},
	{name: "nvidia-h100-80gb", kind: GPU, source: srcGKE},
	{name: "nvidia-h100-mega-80gb", kind: GPU, source: srcGKE},
}

// singleHostChips are the TPU machine types' chip counts that only make
// single-host slices (srcGKE): a 1-chip VM is the 1x1 slice, an 8-chip VM the
// 2x4 one; multi-host slices are made of 4-chip VMs.
var singleHostChips = []int{1, 8}

// gpuType returns the Dataflow table's row for a GPU accelerator type.
func gpuType(name string) (dataflow.GPUType, bool) {
	for _, t := range dataflow.GPUTypes() {
		if t.Name == name {
			return t, true
		}
	}
	return dataflow.GPUType{}, false
}

// gpuMachines returns the machine types of the Dataflow table that carry
// count GPUs of type name, in the table's order.
func gpuMachines(name string, count int) []string {
	var out []string
	for _, m := range dataflow.MachineTypes() {
		if slices.Contains(m.GPUs[name], count) {
			out = append(out, m.Name)
		}
	}
	return out
}

func fmtInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	if len(s) > 1 {
		return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
	}
	return strings.Join(s, "")
}

// maxNodes bounds node and chip counts, far above any real slice, so that
// they fit the Job's int32 fields.
const maxNodes = 1 << 20

// tpuChipsPerVM is the flex-start TPU guide's "the number of TPU chips in each VM is one, four
// or eight".
var tpuChipsPerVM = []int{1, 4, 8}

func lookupAccelerator(name string) (acceleratorType, bool) {
	i := slices.IndexFunc(accelerators, func(a acceleratorType) bool { return a.name == name })
	if i < 0 {
		return acceleratorType{}, false
	}
	return accelerators[i], true
}

func knownAccelerators() string {
	names := make([]string, len(accelerators))
	for i, a := range accelerators {
		names[i] = a.name
	}
	return strings.Join(names, ", ")
}

// Accelerator is what a job's nodes carry.
type Accelerator struct {
	// Type is the GKE accelerator type: a TPU one ("tpu-v6e-slice",
	// "tpu-v5-lite-podslice", ...) or a GPU one ("nvidia-l4", ...).
	Type string
	// Topology is the TPU slice's physical topology, "AxB" or "AxBxC" (seed
	// 003: 2x2, 4x4, 4x4x4). TPUs only.
	Topology string
	// PerNode is the number of chips (TPU) or GPUs on each node, which each
	// pod requests: the flex-start TPU guide's NUM_CHIPS, 1, 4 or 8 for TPUs.
	PerNode int
	// Nodes is the number of hosts of a multi-host GPU job. For TPUs the
	// node count follows from Topology and PerNode; leave Nodes 0 or set it
	// to that count.
	Nodes int
}

// Kind returns the kind of a's type, and false where the type is unknown.
func (a Accelerator) Kind() (Kind, bool) {
	t, ok := lookupAccelerator(a.Type)
	return t.kind, ok
}

// NodeCount returns the number of nodes (VMs) of a TPU slice: the chips of the
// topology divided by the chips per VM. The flex-start TPU guide: "a 4x4 topology consists
// of 16 chips and each ct6e-standard-4t VM has 4 chips", so 4 nodes.
func NodeCount(topology string, chipsPerNode int) (int, error) {
	chips, err := topologyChips(topology)
	if err != nil {
		return 0, err
	}
	if chipsPerNode < 1 {
		return 0, fmt.Errorf("chips per node %d is not positive", chipsPerNode)
	}
	if chips%chipsPerNode != 0 {
		return 0, fmt.Errorf("topology %s has %d chips, which is not a multiple of %d chips per node", topology, chips, chipsPerNode)
	}
	return chips / chipsPerNode, nil
}

// topologyChips returns the product of a topology's dimensions.
func topologyChips(topology string) (int, error) {
	dims := strings.Split(topology, "x")
	if topology == "" || len(dims) < 2 || len(dims) > 3 {
		return 0, fmt.Errorf("topology %q is not AxB or AxBxC", topology)
	}
	chips := 1
	for _, d := range dims {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || strings.HasPrefix(d, "+") {
			return 0, fmt.Errorf("topology %q is not a product of positive integers (AxB or AxBxC): %q", topology, d)
		}
		if chips > maxNodes/n {
			return 0, fmt.Errorf("topology %q has too many chips", topology)
		}
		chips *= n
	}
	return chips, nil
}

// nodes validates a and returns its node count.
func (a Accelerator) nodes() (Kind, int, error) {
	t, ok := lookupAccelerator(a.Type)
	if !ok {
		return "", 0, fmt.Errorf("accelerator type %q is unknown; the known types are %s", a.Type, knownAccelerators())
	}
	if a.PerNode < 1 {
		return "", 0, fmt.Errorf("accelerator %s: %d per node is not positive", a.Type, a.PerNode)
	}
	if a.Nodes < 0 || a.Nodes > maxNodes {
		return "", 0, fmt.Errorf("accelerator %s: node count %d is not between 0 and %d", a.Type, a.Nodes, maxNodes)
	}
	switch t.kind {
	case TPU:
		if !slices.Contains(tpuChipsPerVM, a.PerNode) {
			return "", 0, fmt.Errorf("accelerator %s: %d chips per node; a TPU VM has 1, 4 or 8 chips (https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training-tpu)", a.Type, a.PerNode)
		}
		if !slices.Contains(t.chips, a.PerNode) {
			ms := make([]string, len(t.chips))
			for i, c := range t.chips {
				ms[i] = fmt.Sprintf(t.machine, c)
			}
			return "", 0, fmt.Errorf("accelerator %s: %d chips per node; its VMs have %s chips (%s)", a.Type, a.PerNode, fmtInts(t.chips), strings.Join(ms, ", "))
		}
		n, err := NodeCount(a.Topology, a.PerNode)
		if err != nil {
			return "", 0, fmt.Errorf("accelerator %s: %w", a.Type, err)
		}
		if d := strings.Count(a.Topology, "x") + 1; d != t.dims {
			shape := map[int]string{2: "AxB", 3: "AxBxC"}[t.dims]
			return "", 0, fmt.Errorf("accelerator %s: topology %s has %d dimensions; %s slices have %d (%s)", a.Type, a.Topology, d, a.Type, t.dims, shape)
		}
		if n > 1 && slices.Contains(singleHostChips, a.PerNode) {
			return "", 0, fmt.Errorf("accelerator %s: topology %s at %d chips per node makes %d nodes, but %d-chip VMs make single-host slices only (of %d chips); a multi-host slice is made of 4-chip VMs",
				a.Type, a.Topology, a.PerNode, n, a.PerNode, a.PerNode)
		}
		if a.Nodes != 0 && a.Nodes != n {
			return "", 0, fmt.Errorf("accelerator %s: nodes %d disagrees with topology %s at %d chips per node, which makes %d nodes", a.Type, a.Nodes, a.Topology, a.PerNode, n)
		}
		return TPU, n, nil
	default:
		if a.Topology != "" {
			return "", 0, fmt.Errorf("accelerator %s is a GPU; topology %q applies to TPUs only", a.Type, a.Topology)
		}
		g, ok := gpuType(a.Type)
		if !ok {
			return "", 0, fmt.Errorf("accelerator %s is not in runtime/dataflow's GPU table", a.Type)
		}
		if !slices.Contains(g.Counts, a.PerNode) {
			return "", 0, fmt.Errorf("accelerator %s: %d GPUs per node is not a count its machine types have; a node has %s", a.Type, a.PerNode, fmtInts(g.Counts))
		}
		return GPU, max(a.Nodes, 1), nil
	}
}

// DefaultMachineType returns a node machine type for a: for a TPU, the
// machine type of its version with PerNode chips (ct6e-standard-4t for
// tpu-v6e-slice at 4 chips, the flex-start TPU guide's); for a GPU, the first machine type of
// runtime/dataflow's table that carries PerNode GPUs of the type
// (n1-standard-4 for one nvidia-tesla-t4, g2-standard-4 for one nvidia-l4,
// a2-highgpu-1g for one nvidia-tesla-a100, ...). It returns the validation
// error of a where a is invalid.
func DefaultMachineType(a Accelerator) (string, error) {
	kind, _, err := a.nodes()
	if err != nil {
		return "", err
	}
	if kind == TPU {
		t, _ := lookupAccelerator(a.Type)
		return fmt.Sprintf(t.machine, a.PerNode), nil
	}
	ms := gpuMachines(a.Type, a.PerNode)
	if len(ms) == 0 {
		return "", fmt.Errorf("accelerator %s: no machine type of runtime/dataflow's table carries %d", a.Type, a.PerNode)
	}
	return ms[0], nil
}

// JobSpec describes a batch Job on flex-start nodes.
type JobSpec struct {
	// Name is the Job's name (a DNS label); the pods get the label
	// job-name=<Name>, and the container is named after it too.
	Name string
	// Namespace is the Job's namespace; empty for the current one.
	Namespace string
	// Image, Command and Args are the container's.
	Image   string
	Command []string
	Args    []string
	// Accelerator is what each node carries and each pod requests.
	Accelerator Accelerator
	// ServiceName names the headless Service of a multi-host Job; empty for
	// "<Name>-headless" (the flex-start TPU guide calls it headless-svc; a per-job name lets
	// several jobs share a namespace).
	ServiceName string
}

func (s JobSpec) serviceName() string {
	if s.ServiceName != "" {
		return s.ServiceName
	}
	return s.Name + "-headless"
}

// validate checks s and returns the accelerator kind and node count.
func (s JobSpec) validate(multiHost bool) (Kind, int, error) {
	var errs []error
	for _, e := range validation.IsDNS1123Label(s.Name) {
		errs = append(errs, fmt.Errorf("job name %q: %s", s.Name, e))
	}
	if s.Namespace != "" {
		for _, e := range validation.IsDNS1123Label(s.Namespace) {
			errs = append(errs, fmt.Errorf("namespace %q: %s", s.Namespace, e))
		}
	}
	if multiHost {
		for _, e := range validation.IsDNS1123Label(s.serviceName()) {
			errs = append(errs, fmt.Errorf("service name %q: %s", s.serviceName(), e))
		}
	}
	if strings.TrimSpace(s.Image) == "" {
		errs = append(errs, errors.New("image is empty"))
	}
	kind, n, err := s.Accelerator.nodes()
	if err != nil {
		errs = append(errs, err)
	} else if !multiHost && n != 1 {
		if kind == TPU {
			errs = append(errs, fmt.Errorf("a single-host job runs on 1 node, but accelerator %s with topology %s at %d chips per node needs %d nodes; use MultiHostJob",
				s.Accelerator.Type, s.Accelerator.Topology, s.Accelerator.PerNode, n))
		} else {
			errs = append(errs, fmt.Errorf("a single-host job runs on 1 node, but accelerator %s asks for %d nodes; use MultiHostJob", s.Accelerator.Type, n))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", 0, err
	}
	return kind, n, nil
}
