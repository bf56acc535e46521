package onnx

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// An operator is implemented once, as an OpDef registered from the file
// that holds its code (RegisterOp, from an init function), the way image
// formats register with package image: nothing lists the operators. For
// each node of a model the loader calls the OpDef's New, which reads and
// checks the node's attributes and returns the node's Kernel. Planning
// asks the Kernel for its outputs' types and shapes (Infer), running the
// model asks it to compute them (Run), and on the GPU executor a Kernel
// that also implements Launcher runs on the device.

// MinOpset and MaxOpset bound the opset versions of the default domain
// ("" or "ai.onnx") that a model may import. Of the operators opsets 19
// to 21 changed, Resize registers its version 19, Gelu (new in 20) its 20
// and GroupNormalization (scale and bias per channel) its 21; the others
// refuse what 19 to 21 added (AveragePool's dilations, Cast's saturate and
// the quantizers' block_size are attributes they do not read, Pad's wrap a
// mode they do not take, float8 and the 4-bit integers types the runtime
// lacks, ReduceMax's and ReduceMin's booleans a type they do not take), so
// a model of opset 19, 20 or 21 runs as its opset says or is refused.
const (
	MinOpset = 1
	MaxOpset = 21
)

// OpDef is an ONNX operator's implementation.
type OpDef struct {
	// Name is the operator's name, e.g. "Conv".
	Name string
	// Versions are the opset versions in which ONNX defined the operator
	// (Operators.md's "since version" list) that this implementation
	// follows, oldest first. A node of a model importing opset v gets the
	// newest version <= v (Node.Since); a model older than Versions[0] has
	// no such operator.
	Versions []int
	// New reads and checks a node's attributes (and how many inputs and
	// outputs it has) and returns its kernel. Its errors are the node's
	// (the loader names the node).
	New func(n *Node) (Kernel, error)
}

// Node is a model's node as an OpDef's New sees it.
type Node struct {
	// Name is the node's name ("" if the model gives none), Op its
	// operator.
	Name, Op string
	// Opset is the model's opset version of the default domain; Since is
	// the operator version that applies (the newest of OpDef.Versions at
	// most Opset).
	Opset, Since int
	// Inputs and Outputs are the names of the node's values; "" marks an
	// optional input or output that is left out.
	Inputs, Outputs []string
	// Attrs are the node's attributes.
	Attrs *Attrs
}

// HasInput reports whether input i is given.
func (n *Node) HasInput(i int) bool { return i < len(n.Inputs) && n.Inputs[i] != "" }

// HasOutput reports whether output i is wanted.
func (n *Node) HasOutput(i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }

// CheckArity fails unless the node has between minIn and maxIn inputs and
// between minOut and maxOut outputs (counting left-out optional ones).
func (n *Node) CheckArity(minIn, maxIn, minOut, maxOut int) error {
	if len(n.Inputs) < minIn || len(n.Inputs) > maxIn {
		return fmt.Errorf("%d inputs, want %s", len(n.Inputs), span(minIn, maxIn))
	}
	if len(n.Outputs) < minOut || len(n.Outputs) > maxOut {
		return fmt.Errorf("%d outputs, want %s", len(n.Outputs), span(minOut, maxOut))
	}
	return nil
}

func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	if hi > 1<<20 {
		return fmt.Sprintf("%d or more", lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// Kernel is one node of a model, its attributes read.
type Kernel interface {
	// Infer returns the types and shapes of the node's outputs (one Meta
	// per output; a left-out output's is ignored) from its inputs' (a
	// left-out input's Meta is the zero Meta). An input whose contents it
	// needs (a shape, axes, pads) has them in Value when they are known
	// before the model runs; if not, Infer returns NeedValue(i).
	Infer(in []Meta) ([]Meta, error)
	// Run computes the outputs on the CPU. out holds arrays of the types
	// and shapes Infer gave, uninitialised (but views, see Viewer); a
	// left-out input or output is the zero Array.
	Run(in, out []nd.Array) error
}

// Meta is what planning knows of a value: its element type and shape, and
// its contents when they are known before the model runs (an initializer,
// a constant, a value computed from shapes only).
type Meta struct {
	Type  nd.DType
	Shape []int
	Value *nd.Array
}

func (m Meta) String() string { return fmt.Sprintf("%v%s", m.Type, nd.ShapeString(m.Shape)) }

// Known returns m's value as int64s (shapes, axes, pads), ok false when it
// is not known.
func (m Meta) Known() ([]int64, bool) {
	if m.Value == nil {
		return nil, false
	}
	v, err := nd.Int64s(*m.Value)
	return v, err == nil
}

// Viewer is a Kernel some of whose outputs are views of an input (the same
// data, another shape): Reshape, Flatten, Squeeze, Identity. The runtime
// makes those outputs views instead of allocating them (Run is still
// called, for the other outputs).
type Viewer interface {
	// View returns the input whose data output out views, or ok false.
	View(out int) (in int, ok bool)
}

// Overwriter is a Kernel that can write an output over one of its inputs:
// it reads each element of that input before it writes the same element
// of the output, and no other. Where no later step reads that input (nor
// a view of it) and it is the run's own (in the workspace, of the output's
// size), the plan puts the output in its memory: one buffer less in the
// workspace, and a kernel that reads and writes the same cache lines
// instead of streaming a third array (a convolution that adds a residual:
// ResNet's 1x1 expansions). A Launch is given the same buffer for both.
type Overwriter interface {
	// Overwrites returns the input that output out may be written over,
	// or ok false, given the step's inputs' types and shapes.
	Overwrites(out int, in []Meta) (int, bool)
}

// Nondeterministic is a Kernel whose outputs are not a function of its
// inputs (random numbers): it is never computed ahead of a run.
type Nondeterministic interface {
	Nondeterministic()
}

// DataShaped is a Kernel whose outputs' shapes can depend on its inputs'
// contents (NonZero, NonMaxSuppression, Loop, an If whose branches give
// different shapes). Where they do and the contents are not known before
// the run, Infer returns ShapeFromData(): the plan then ends at the node,
// the run computes what comes before it, calls RunShaped with the node's
// inputs, and plans the rest of the model for the shapes RunShaped gave
// (keeping those plans too, by shape).
type DataShaped interface {
	Kernel
	// RunShaped computes the outputs, making each with alloc (memory of
	// the run, within its budget). A left-out output is the zero Array.
	RunShaped(in []nd.Array, alloc func(t nd.DType, shape []int) (nd.Array, error)) ([]nd.Array, error)
}

// nested is a Kernel that runs plans of its own (If, Loop, Scan): a run
// calls runIn with its memory instead of Run, so that what those plans
// allocate counts against the run's budget and they stop with the run's
// context; a nested DataShaped kernel's runShapedIn likewise.
type nested interface {
	runIn(mem *memory, in, out []nd.Array) error
}

type nestedShaped interface {
	runShapedIn(mem *memory, in []nd.Array, alloc func(t nd.DType, shape []int) (nd.Array, error)) ([]nd.Array, error)
}

// runKernel runs k on the CPU within mem: by runIn where k is nested.
func runKernel(k Kernel, mem *memory, in, out []nd.Array) error {
	if n, ok := k.(nested); ok {
		return n.runIn(mem, in, out)
	}
	return k.Run(in, out)
}

// errShapeFromData is ShapeFromData's error.
var errShapeFromData = errors.New("the outputs' shapes depend on the inputs' contents")

// ShapeFromData is what a DataShaped kernel's Infer returns when its
// outputs' shapes depend on input contents not known before the run.
func ShapeFromData() error { return errShapeFromData }

// needValue is the error of an Infer that needs an input's contents.
type needValue struct{ input int }

func (e needValue) Error() string {
	return fmt.Sprintf("input %d must be known before the model runs (a constant, or computed from shapes)", e.input)
}

// NeedValue is what Infer returns when input i's contents are not known.
func NeedValue(i int) error { return needValue{i} }

func isNeedValue(err error) (int, bool) {
	var nv needValue
	if errors.As(err, &nv) {
		return nv.input, true
	}
	return 0, false
}

var (
	opsMu sync.RWMutex
	ops   = map[string]*OpDef{}
)

// RegisterOp makes an operator available to models. It panics if the name
// is taken or the definition is incomplete: programming errors, found at
// init.
func RegisterOp(d OpDef) {
	switch {
	case d.Name == "" || d.New == nil || len(d.Versions) == 0:
		panic(fmt.Sprintf("onnx.RegisterOp(%q): needs Name, Versions and New", d.Name))
	case !sort.IntsAreSorted(d.Versions):
		panic(fmt.Sprintf("onnx.RegisterOp(%q): Versions must be in increasing order", d.Name))
	}
	opsMu.Lock()
	defer opsMu.Unlock()
	if _, dup := ops[d.Name]; dup {
		panic(fmt.Sprintf("onnx.RegisterOp: %s registered twice", d.Name))
	}
	ops[d.Name] = &d
}

// Ops returns the registered operators, sorted by name.
func Ops() []OpDef {
	opsMu.RLock()
	defer opsMu.RUnlock()
	out := make([]OpDef, 0, len(ops))
	for _, d := range ops {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func lookupOp(name string) (*OpDef, bool) {
	opsMu.RLock()
	defer opsMu.RUnlock()
	d, ok := ops[name]
	return d, ok
}

// since returns the version of d that applies at opset, ok false when d is
// newer than the opset.
func (d *OpDef) since(opset int) (int, bool) {
	v := 0
	for _, s := range d.Versions {
		if s <= opset {
			v = s
		}
	}
	return v, v > 0
}
