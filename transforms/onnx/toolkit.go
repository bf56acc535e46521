package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The toolkit of an operator's code: the helpers that a Kernel's New,
// Infer, Run and Launch use to read axes, broadcast shapes and read inputs
// known before the run. They are exported for operators registered from
// outside this package (RegisterOp; doc.go, "Writing an operator"), with
// the registry's own types (op.go), Attrs (attrs.go) and the device's
// (gpu.go); the package's operators use the same.

// NormAxis turns an axis in [-rank, rank) into [0, rank).
func NormAxis(axis, rank int) (int, error) {
	if axis < -rank || axis >= rank {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

// NormAxes normalises axes (NormAxis) and refuses repeats.
func NormAxes(axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	seen := map[int]bool{}
	for i, a := range axes {
		n, err := NormAxis(int(a), rank)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, fmt.Errorf("axis %d is repeated in %v", a, axes)
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// BroadcastShapes is the shape of ONNX's multidirectional (NumPy)
// broadcasting of shapes: aligned at the right, each dimension equal or 1.
func BroadcastShapes(shapes ...[]int) ([]int, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			o := rank - len(s) + i
			switch {
			case d == out[o] || d == 1:
			case out[o] == 1:
				out[o] = d
			default:
				return nil, fmt.Errorf("shapes %s cannot be broadcast together (dimension %d: %d and %d)", shapesString(shapes), o, out[o], d)
			}
		}
	}
	return out, nil
}

// BroadcastStrides returns the element strides with which an array of shape
// in is read to fill shape out (which BroadcastShapes gave): 0 along the
// dimensions it is broadcast over.
func BroadcastStrides(in, out []int) []int {
	st := make([]int, len(out))
	stride := 1
	for i := len(in) - 1; i >= 0; i-- {
		o := len(out) - len(in) + i
		if in[i] != 1 {
			st[o] = stride
		}
		stride *= in[i]
	}
	return st
}

// Strides returns the row-major element strides of shape.
func Strides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// KnownInts returns the contents of input i, an integer tensor read as
// shapes, axes or pads are (what names it in errors): NeedValue(i) when
// they are not known before the run.
func KnownInts(in []Meta, i int, what string) ([]int64, error) {
	if i >= len(in) || in[i].Value == nil {
		return nil, NeedValue(i)
	}
	if t := in[i].Type; !t.IsInt() {
		return nil, fmt.Errorf("%s is %v, want integers", what, t)
	}
	return nd.Int64s(*in[i].Value)
}

// ValueMetas wraps a run's input arrays as Metas with their values, so
// that Run can read its arguments as Infer did (a left-out input stays the
// zero Meta).
func ValueMetas(in []nd.Array) []Meta {
	out := make([]Meta, len(in))
	for i := range in {
		if in[i].Type != nd.Undefined {
			out[i] = Meta{Type: in[i].Type, Shape: in[i].Shape, Value: &in[i]}
		}
	}
	return out
}
