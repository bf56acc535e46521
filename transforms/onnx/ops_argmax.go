package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// ArgMax and ArgMin (opsets 1, 11, 12, 13): the int64 index of the largest
// (smallest) value along axis (default 0, negative counted from the end),
// keepdims (default 1) keeping the axis as a dimension of 1. Ties give the
// first index, or the last with select_last_index (from 12). A NaN counts
// as larger (smaller) than every number, as NumPy's argmax does: the first
// NaN wins (the last with select_last_index). An empty axis is an error.

func init() {
	RegisterOp(OpDef{Name: "ArgMax", Versions: []int{1, 11, 12, 13}, New: newArgExt(false)})
	RegisterOp(OpDef{Name: "ArgMin", Versions: []int{1, 11, 12, 13}, New: newArgExt(true)})
}

type argExtKernel struct {
	name     string
	isMin    bool
	axis     int
	keepdims bool
	last     bool // select_last_index
}

func newArgExt(isMin bool) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		a := n.Attrs
		k := &argExtKernel{name: n.Op, isMin: isMin}
		k.axis = int(a.Int("axis", 0))
		k.keepdims = a.Int("keepdims", 1) != 0
		if n.Since >= 12 {
			k.last = a.Flag("select_last_index", false)
		}
		return k, a.Err()
	}
}

// split views the input as outer x n x inner, n the axis's length.
func (k *argExtKernel) split(x []int) (outer, n, inner int, err error) {
	ax, err := NormAxis(k.axis, len(x))
	if err != nil {
		return 0, 0, 0, err
	}
	if x[ax] == 0 {
		return 0, 0, 0, fmt.Errorf("input data has shape %s: %s over an empty axis %d", nd.ShapeString(x), k.name, ax)
	}
	return numel(x[:ax]), x[ax], numel(x[ax+1:]), nil
}

func (k *argExtKernel) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	if !isNumeric(x.Type) {
		return nil, fmt.Errorf("%s of %v: takes a number type", k.name, x.Type)
	}
	if _, _, _, err := k.split(x.Shape); err != nil {
		return nil, err
	}
	ax, _ := NormAxis(k.axis, len(x.Shape))
	out := make([]int, 0, len(x.Shape))
	for i, d := range x.Shape {
		switch {
		case i != ax:
			out = append(out, d)
		case k.keepdims:
			out = append(out, 1)
		}
	}
	return []Meta{{Type: nd.Int64, Shape: out}}, nil
}

func (k *argExtKernel) Run(in, out []nd.Array) error {
	outer, n, inner, err := k.split(in[0].Shape)
	if err != nil {
		return err
	}
	f, err := numeric[argExtLoop](k.name, in[0].Type)
	if err != nil {
		return err
	}
	f.argExt(in[0], out[0], outer, n, inner, k.isMin, k.last)
	return nil
}

type argExtLoop interface {
	argExt(x, y nd.Array, outer, n, inner int, isMin, last bool)
}

func (numbers[T, W]) argExt(x, y nd.Array, outer, n, inner int, isMin, last bool) {
	if x.Type == nd.Float32 && inner > 1 {
		argExtF32(nd.MustAs[float32](x), nd.MustAs[int64](y), outer, n, inner, isMin, last)
		return
	}
	argExt(nd.MustAs[T](x), nd.MustAs[int64](y), outer, n, inner, isMin, last)
}

// argExtF32 is argExt for float32 with the choice made without a branch
// (on random values better's branches mispredict half the time): the
// same indices. A block of rows is first taken as holding no NaN (one
// comparison per element, NaNs only noted), in AVX2 where there is one
// (argStepVec, for the first index among ties); a block that holds a NaN is
// done again with NaN's rules (argExtNaN).
func argExtF32(xs []float32, ys []int64, outer, n, inner int, isMin, last bool) {
	l := b2u(last)
	parallel.For(outer, n*inner, func(lo, hi int) {
		best := make([]float32, inner)
		idx32 := make([]int32, inner)
		for o := lo; o < hi; o++ {
			row := xs[o*n*inner : (o+1)*n*inner]
			idx := ys[o*inner : (o+1)*inner]
			copy(best, row[:inner])
			var nan uint32
			for _, v := range row[:inner] {
				nan |= b2u(v != v)
			}
			if last || n > math.MaxInt32 {
				clear(idx)
				for j := 1; j < n; j++ {
					nan |= argStep(best, idx, row[j*inner:(j+1)*inner], int64(j), l, isMin)
				}
			} else { // the first index among ties: the vector kernel where there is one, indices in int32
				clear(idx32)
				for j := 1; j < n; j++ {
					r := row[j*inner : (j+1)*inner]
					done, vnan := argStepVec(best, idx32, r, int32(j), isMin)
					nan |= b2u(vnan) | argStep(best[done:], idx32[done:], r[done:], int32(j), 0, isMin)
				}
				for i, v := range idx32 {
					idx[i] = int64(v)
				}
			}
			if nan != 0 {
				argExtNaN(row, idx, best, n, inner, isMin, l)
			}
		}
	})
}

// argStep folds row j, r, into best and idx, taking a NaN for a number
// (v replaces b where v < b with isMin, v > b otherwise; ties with last
// (l 1)); it returns 1 if r holds a NaN. A function of its own, so that
// its loop keeps its values in registers.
func argStep[I int32 | int64](best []float32, idx []I, r []float32, j I, l uint32, isMin bool) uint32 {
	best, idx = best[:len(r)], idx[:len(r)]
	var nan uint32
	for i, v := range r {
		b := best[i]
		var t uint32
		if isMin {
			t = b2u(v < b)
		} else {
			t = b2u(v > b)
		}
		t |= b2u(v == b) & l
		nan |= b2u(v != v)
		m := -t
		best[i] = math.Float32frombits(math.Float32bits(v)&m | math.Float32bits(b)&^m)
		idx[i] += (j - idx[i]) & -I(t)
	}
	return nan
}

// argExtNaN is one row block of argExtF32 with NaN the extreme (the first
// one unless last).
func argExtNaN(row []float32, idx []int64, best []float32, n, inner int, isMin bool, l uint32) {
	copy(best, row[:inner])
	clear(idx)
	for j := 1; j < n; j++ {
		r := row[j*inner : (j+1)*inner]
		for i, v := range r {
			b := best[i]
			var t uint32
			if isMin {
				t = b2u(v < b)
			} else {
				t = b2u(v > b)
			}
			t |= b2u(v == b)&l | b2u(v != v)&(b2u(b == b)|l)
			m := -t
			best[i] = math.Float32frombits(math.Float32bits(v)&m | math.Float32bits(b)&^m)
			idx[i] += (int64(j) - idx[i]) & -int64(t)
		}
	}
}

// argExt writes into ys[o*inner+i] the index j of the extreme of
// xs[(o*n+j)*inner+i]. The inner loop runs over i, contiguous in both.
func argExt[T numElem](xs []T, ys []int64, outer, n, inner int, isMin, last bool) {
	parallel.For(outer, n*inner, func(lo, hi int) {
		best := make([]T, inner)
		for o := lo; o < hi; o++ {
			row := xs[o*n*inner : (o+1)*n*inner]
			idx := ys[o*inner : (o+1)*inner]
			copy(best, row[:inner])
			clear(idx)
			for j := 1; j < n; j++ {
				r := row[j*inner : (j+1)*inner]
				for i, v := range r {
					if better(v, best[i], isMin, last) {
						best[i], idx[i] = v, int64(j)
					}
				}
			}
		}
	})
}

// better reports whether v, met after b, replaces it as the extreme.
func better[T numElem](v, b T, isMin, last bool) bool {
	if v != v { // NaN: the extreme, the first one unless last
		return b == b || last
	}
	if b != b {
		return false
	}
	if isMin {
		return v < b || (last && v == b)
	}
	return v > b || (last && v == b)
}
