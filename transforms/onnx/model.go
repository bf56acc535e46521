package onnx

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Model is a loaded ONNX model: parsed, every node's operator found and its
// attributes checked, the graph sorted, and the parts that depend on the
// weights alone computed once (constant folding). It is safe for concurrent
// use; Run plans the graph once per input shape and keeps the plans.
//
// Float16 and BFloat16 weights and values are widened to float32 at load,
// and the model computes in float32: a Cast to Float16 rounds to half
// precision and keeps the result as float32; inputs declared Float16 take
// Float16 or Float32 arrays, and outputs declared Float16 are rounded back
// to Float16 at the end.
type Model struct {
	// ID identifies the model's content: "sha256:" and the first 16 bytes
	// of the SHA-256 of its file and external data, in hex.
	ID string
	// Name is the file's base name, or the graph's name.
	Name string
	// Opset is the model's opset version of the default domain.
	Opset int
	// IRVersion and Producer are what the file says (e.g. 8, "pytorch 1.13.1").
	IRVersion int64
	Producer  string
	// Inputs are the values a caller feeds, in the graph's order (graph
	// inputs that are not initializers); Outputs the values it returns.
	Inputs, Outputs []ValueInfo

	g             *graph
	plans         planCache
	states        idleStates // the plans' run states not in use
	deviceWeights            // the weights' place on the device (gpu.go)
}

// ValueInfo is a graph input or output as the model declares it.
type ValueInfo struct {
	Name string
	Type nd.DType
	// Shape is the declared shape; nil when the model declares none.
	Shape []Dim
}

// Dim is a dimension of a declared shape: a size, or a name (a symbolic
// dimension such as "batch") with Size -1, or unknown (Size -1, no name).
type Dim struct {
	Size  int
	Param string
}

func (d Dim) String() string {
	switch {
	case d.Size >= 0:
		return strconv.Itoa(d.Size)
	case d.Param != "":
		return d.Param
	}
	return "?"
}

func (v ValueInfo) String() string {
	dims := make([]string, len(v.Shape))
	for i, d := range v.Shape {
		dims[i] = d.String()
	}
	if v.Shape == nil {
		return fmt.Sprintf("%s: %v (shape not declared)", v.Name, v.Type)
	}
	return fmt.Sprintf("%s: %v[%s]", v.Name, v.Type, strings.Join(dims, "x"))
}

// SizeBytes is the size of the model's weights in memory (its constants,
// after folding).
func (m *Model) SizeBytes() int64 {
	var n int64
	for _, v := range m.g.values {
		if v.init != nil {
			n += int64(len(v.init.Data))
		}
	}
	return n
}

// OpsUsed returns the operators the model's nodes use (after folding),
// sorted, each once.
func (m *Model) OpsUsed() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range m.g.nodes {
		if !seen[n.Op] {
			seen[n.Op] = true
			out = append(out, n.Op)
		}
	}
	sortStrings(out)
	return out
}

// Batched reports whether the model's first axis is a batch axis of free
// size: every input and output declares a shape of rank 1 or more whose
// first dimension is not a fixed size, with one name where it is named
// ("N", "batch_size"). The rows of such a model's inputs are taken to be
// independent, as exporters mean by a dynamic batch axis: a batch may be
// cut into parts along it and the parts' outputs joined (the GPU executor
// halves a batch it cannot hold; RunInference joins examples into one call).
func (m *Model) Batched() bool {
	name := ""
	for _, vs := range [][]ValueInfo{m.Inputs, m.Outputs} {
		for _, v := range vs {
			if len(v.Shape) == 0 || v.Shape[0].Size >= 0 {
				return false
			}
			if p := v.Shape[0].Param; p != "" {
				if name != "" && p != name {
					return false
				}
				name = p
			}
		}
	}
	return len(m.Inputs) > 0
}

// RandomInputs returns inputs for m drawn with seed: declared sizes as
// declared, every free dimension rows (1 where a shape is undeclared);
// floats normal, integers in [0, 4), booleans true three times in four.
func RandomInputs(m *Model, rows int, seed uint64) []nd.Array {
	r := rand.New(rand.NewPCG(seed, 18))
	out := make([]nd.Array, len(m.Inputs))
	for i, v := range m.Inputs {
		shape := []int{rows}
		if v.Shape != nil {
			shape = make([]int, len(v.Shape))
			for d, dim := range v.Shape {
				shape[d] = rows
				if dim.Size >= 0 {
					shape[d] = dim.Size
				}
			}
		}
		t := internal(v.Type)
		a := nd.Zeros(t, shape...)
		if t.IsFloat() {
			f := make([]float64, a.Len())
			for j := range f {
				f[j] = r.NormFloat64()
			}
			nd.ConvertInto(a, nd.Of(f, shape...))
		} else {
			f := make([]int64, a.Len())
			for j := range f {
				f[j] = int64(r.IntN(4))
			}
			nd.ConvertInto(a, nd.Of(f, shape...))
		}
		out[i] = a
	}
	return out
}
