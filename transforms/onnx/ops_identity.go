package onnx

import (
	"errors"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Identity (opsets 1, 13, 14, 16): its output is its input, as a view.

func init() {
	RegisterOp(OpDef{Name: "Identity", Versions: []int{1, 13, 14, 16}, New: func(n *Node) (Kernel, error) {
		return identity{}, n.CheckArity(1, 1, 1, 1)
	}})
	RegisterOp(OpDef{Name: "Constant", Versions: []int{1, 9, 11, 12, 13}, New: newConstant})
}

type identity struct{}

func (identity) Infer(in []Meta) ([]Meta, error) { return []Meta{in[0]}, nil }
func (identity) Run(in, out []nd.Array) error    { return nil }
func (identity) View(int) (int, bool)            { return 0, true }

// Constant (opsets 1, 9, 11, 12, 13): a tensor attribute (value), or from
// 12 a scalar or list (value_float(s), value_int(s)); strings and sparse
// tensors are not supported.
type constant struct{ v nd.Array }

func newConstant(n *Node) (Kernel, error) {
	if err := n.CheckArity(0, 0, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	var v nd.Array
	set := 0
	if t, ok := a.Tensor("value"); ok {
		v, set = t, set+1
	}
	if n.Since >= 12 {
		if a.Has("value_string") || a.Has("value_strings") {
			return nil, errors.New("string constants are not supported")
		}
		if a.Has("sparse_value") {
			return nil, errors.New("sparse constants are not supported")
		}
		if f := a.Float("value_float", 0); a.Has("value_float") {
			v, set = nd.Scalar(f), set+1
		}
		if f, ok := a.Floats("value_floats"); ok {
			v, set = nd.Of(f), set+1
		}
		if i := a.Int("value_int", 0); a.Has("value_int") {
			v, set = nd.Scalar(i), set+1
		}
		if i, ok := a.Ints("value_ints"); ok {
			v, set = nd.Of(i), set+1
		}
	} else if a.Has("sparse_value") {
		return nil, errors.New("sparse constants are not supported")
	}
	if set != 1 {
		return nil, errors.New("exactly one value attribute must be set")
	}
	return constant{v}, a.Err()
}

func (c constant) Infer([]Meta) ([]Meta, error) {
	return []Meta{{Type: c.v.Type, Shape: c.v.Shape, Value: &c.v}}, nil
}
func (c constant) Run(in, out []nd.Array) error { copy(out[0].Data, c.v.Data); return nil }
