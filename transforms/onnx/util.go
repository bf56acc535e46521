package onnx

import (
	"fmt"
	"strings"
	"sync"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// What the operators share: axes, broadcasting.

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

// The helpers below came with Conv, MatMul, Gemm, the normalisations and
// the pools (several of them use each).

// metaAt is in[i], the zero Meta when the node has fewer inputs.
func metaAt(in []Meta, i int) Meta {
	if i < len(in) {
		return in[i]
	}
	return Meta{}
}

// arrayAt is in[i], the zero Array when the node has fewer inputs or
// outputs.
func arrayAt(in []nd.Array, i int) nd.Array {
	if i < len(in) {
		return in[i]
	}
	return nd.Array{}
}

// asOr is a's elements, nil for a left-out input.
func asOr[T nd.Elem](a nd.Array) []T {
	if a.Type == nd.Undefined {
		return nil
	}
	return nd.MustAs[T](a)
}

// numel is the product of shape's dimensions (a checked shape's element
// count).
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// unidirectional reports whether shape s broadcasts to shape to (ONNX's
// unidirectional broadcasting: aligned at the right, each dimension equal
// or 1).
func unidirectional(s, to []int) bool {
	if len(s) > len(to) {
		return false
	}
	for i, d := range s {
		if t := to[len(to)-len(s)+i]; d != t && d != 1 {
			return false
		}
	}
	return true
}

// floatPool holds scratch buffers of float32s (im2col patches, product
// tiles, padded planes), reused across tasks and runs.
var floatPool sync.Pool

// getFloats returns a scratch buffer of at least n floats (contents
// undefined); putFloats gives it back.
func getFloats(n int) *[]float32 {
	if b, ok := floatPool.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n, n+n/4)
	return &b
}

func putFloats(b *[]float32) { floatPool.Put(b) }

// shapesString writes shapes as "[2x3] and [4]" for error messages.
func shapesString(shapes [][]int) string {
	parts := make([]string, len(shapes))
	for i, s := range shapes {
		parts[i] = nd.ShapeString(s)
	}
	return strings.Join(parts, " and ")
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

// knownShape reads input i, a shape (ConstantOfShape's, Expand's), known
// before the run, as dimensions.
func knownShape(in []Meta, i int) ([]int, error) {
	dims, err := KnownInts(in, i, "shape")
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(dims))
	for j, d := range dims {
		if d < 0 || d > nd.MaxElements {
			return nil, fmt.Errorf("shape %v: dimension %d is %d", dims, j, d)
		}
		shape[j] = int(d)
	}
	return shape, nil
}

// sameTypeErr says that inputs (named) that must share a type do not; a
// left-out one is not named.
func sameTypeErr(names []string, in ...Meta) error {
	var parts []string
	for i, m := range in {
		if m.Type != nd.Undefined {
			parts = append(parts, fmt.Sprintf("%s %v", names[i], m.Type))
		}
	}
	return fmt.Errorf("input %s: want one type", strings.Join(parts, ", "))
}
