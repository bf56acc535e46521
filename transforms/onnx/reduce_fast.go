package onnx

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// A float32 reduction whose plan (reducePlan) a kernel keeps runs without
// allocating: the plan is what reduceLoop works out from X's shape and the
// axes, made once for the shape and axes a kernel last saw, and the loops
// are reduceLoop's two main ones as functions instantiated outside generic
// code (a function value made in generic code is a closure over its
// dictionary, allocated), with the accumulator of a task from a pool. The
// other cases (other types, empty arrays, rows split between cores) take
// reduceLoop.

// reducePlan is a reduction's loop over X's simplified shape: either the
// last dimension is reduced (each output folds rows of rowLen at roffs
// from koffs[o]) or it is kept (each output row accumulates the rows at
// roffs, in segments of seg, split per row).
type reducePlan struct {
	fast          bool // false: reduceLoop
	lastReduced   bool
	count, rowLen int
	split, seg    int
	roffs, koffs  []int
}

// newReducePlan works out the plan of a reduction of shape over red, as
// reduceLoop does.
func newReducePlan(shape []int, red []bool) *reducePlan {
	var dims []int
	var flags []bool
	p := &reducePlan{count: 1}
	n := 1
	for i, d := range shape {
		n *= d
		if red[i] {
			p.count *= d
		}
		if d == 1 {
			continue
		}
		if k := len(dims); k > 0 && flags[k-1] == red[i] {
			dims[k-1] *= d
			continue
		}
		dims, flags = append(dims, d), append(flags, red[i])
	}
	if n == 0 || len(dims) == 0 {
		return p
	}
	strides := Strides(dims)
	last := len(dims) - 1
	p.rowLen = dims[last]
	var kept, reducedDims []int
	for i := range dims {
		if flags[i] {
			reducedDims = append(reducedDims, i)
		} else {
			kept = append(kept, i)
		}
	}
	if flags[last] {
		outs := n / p.count
		if w := runtime.GOMAXPROCS(0); outs < 2*w && p.rowLen >= 2*ewSegment {
			return p // reduceLoop splits the rows between the cores
		}
		p.fast, p.lastReduced = true, true
		p.roffs = offsetsOf(dims, strides, reducedDims[:len(reducedDims)-1])
		p.koffs = offsetsOf(dims, strides, kept)
		return p
	}
	p.fast = true
	p.roffs = offsetsOf(dims, strides, reducedDims)
	p.koffs = offsetsOf(dims, strides, kept[:len(kept)-1])
	p.split = (p.rowLen + ewSegment - 1) / ewSegment
	p.seg = (p.rowLen + p.split - 1) / p.split
	return p
}

// reducePlans keeps a reduction's plan for X's shape and axes (the
// contents of its axes input) it last saw.
type reducePlans struct {
	last atomic.Pointer[reducePlanFor]
}

type reducePlanFor struct {
	shape []int
	axes  []byte
	p     *reducePlan
}

// get returns the plan for x and axes (Undefined: none), made by red
// (the dimensions reduced) where it is not kept.
func (s *reducePlans) get(x, axes nd.Array, red func() ([]bool, error)) (*reducePlan, error) {
	if e := s.last.Load(); e != nil && nd.SameShape(e.shape, x.Shape) && bytes.Equal(e.axes, axes.Data) {
		return e.p, nil
	}
	r, err := red()
	if err != nil {
		return nil, err
	}
	p := newReducePlan(x.Shape, r)
	s.last.Store(&reducePlanFor{shape: append([]int{}, x.Shape...), axes: bytes.Clone(axes.Data), p: p})
	return p, nil
}

// reduceRun is a fast float32 reduction's: its plan, op and arrays.
type reduceRun struct {
	p    *reducePlan
	op   redOp
	x, y nd.Array
}

// runFloat32 runs a fast plan on float32 arrays: Max and Min compare in
// float32, the others accumulate in float64 (as reduceTyped).
func (r reduceRun) runFloat32() {
	p, cmp := r.p, r.op == redMax || r.op == redMin
	switch {
	case p.lastReduced && cmp:
		parallel.ForWith(r.y.Len(), p.count, r, reduceLastRange[float32, float32])
	case p.lastReduced:
		parallel.ForWith(r.y.Len(), p.count, r, reduceLastRange[float32, float64])
	case cmp:
		parallel.ForWith(len(p.koffs)*p.split, p.seg*len(p.roffs), r, reduceKeptRange[float32, float32])
	default:
		parallel.ForWith(len(p.koffs)*p.split, p.seg*len(p.roffs), r, reduceKeptRange[float32, float64])
	}
}

// reduceInit is the fold's starting value of op.
func reduceInit[T, A numElem](op redOp) A {
	switch op {
	case redMax:
		return A(lowest[T]())
	case redMin:
		return A(highest[T]())
	case redProd:
		return 1
	}
	return 0
}

// reduceLastRange computes outputs lo..hi of a plan whose last dimension
// is reduced.
func reduceLastRange[T, A numElem](r *reduceRun, lo, hi int) {
	p, op := r.p, r.op
	xs, ys := nd.MustAs[T](r.x), nd.MustAs[T](r.y)
	init := reduceInit[T, A](op)
	for o := lo; o < hi; o++ {
		acc := init
		for _, off := range p.roffs {
			acc = reduceRow(op, xs[p.koffs[o]+off:p.koffs[o]+off+p.rowLen], acc)
		}
		ys[o] = reduceResult[T](op, acc, p.count)
	}
}

// reduceKeptRange computes tasks lo..hi (an output row's segments) of a
// plan whose last dimension is kept, in an accumulator from the pool.
func reduceKeptRange[T, A numElem](r *reduceRun, lo, hi int) {
	p, op := r.p, r.op
	xs, ys := nd.MustAs[T](r.x), nd.MustAs[T](r.y)
	init := reduceInit[T, A](op)
	var z A
	buf := getFloats((p.seg*int(unsafe.Sizeof(z)) + 3) / 4)
	defer putFloats(buf)
	acc := unsafe.Slice((*A)(unsafe.Pointer(unsafe.SliceData(*buf))), p.seg)
	for t := lo; t < hi; t++ {
		o, s := t/p.split, t%p.split
		j0, j1 := s*p.seg, min(p.rowLen, (s+1)*p.seg)
		a := acc[:j1-j0]
		for i := range a {
			a[i] = init
		}
		for _, off := range p.roffs {
			reduceInto(op, a, xs[p.koffs[o]+off+j0:p.koffs[o]+off+j1])
		}
		out := ys[o*p.rowLen+j0 : o*p.rowLen+j1]
		for i, v := range a {
			out[i] = reduceResult[T](op, v, p.count)
		}
	}
}
