package onnx

import (
	"fmt"
	"strings"
	"sync"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// What the operators share that is not the exported toolkit (toolkit.go):
// optional inputs, shapes, scratch buffers, error texts. Several
// operators use each.

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
