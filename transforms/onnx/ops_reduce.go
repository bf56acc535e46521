package onnx

import (
	"fmt"
	"math"
	"runtime"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// ReduceSum (opsets 1, 11, 13), ReduceMean (1, 11, 13, 18), ReduceMax and
// ReduceMin (1, 11, 12, 13, 18), ReduceProd, ReduceSumSquare, ReduceL1,
// ReduceL2, ReduceLogSum and ReduceLogSumExp (1, 11, 13, 18): reductions
// over axes, keepdims (default 1) keeping them as dimensions of 1. ReduceL2
// and ReduceLogSum are the square root and the natural log of
// ReduceSumSquare's and ReduceSum's results (computed in float64 and
// converted back); ReduceLogSumExp is the log of the sum of exponentials,
// the exponentials summed in float64 as ONNX's reference computes them (a
// float32 input past 709 overflows the sum to +Inf; the device kernel
// subtracts the maximum first).
//
// The axes are the attribute axes before ReduceSum-13 and the others' 18, and the optional input axes from those versions
// (int64s known before the model runs: a constant, or computed from
// shapes), which add noop_with_empty_axes. No axes, or an empty list,
// reduce every axis, unless noop_with_empty_axes is set: then the output
// is the input. Axes may be negative (counted from the end); a repeated
// axis is an error.
//
// Sums and means of floats accumulate in float64, of signed integers in
// int64 and of unsigned ones in uint64 (wrapping), so that a float32 sum
// does not lose precision with the length. An integer mean truncates
// toward zero. Over an empty set of values the sum is 0, the mean NaN (0
// for integers), the max -Inf (the lowest value for integers), the min
// +Inf (the highest), the product 1, the L1, L2 and sum of squares 0 and
// the log-sum -Inf, as ONNX specifies; ReduceMax and ReduceMin propagate
// NaN.

func init() {
	RegisterOp(OpDef{Name: "ReduceSum", Versions: []int{1, 11, 13}, New: newReduce(redSum, 13)})
	RegisterOp(OpDef{Name: "ReduceMean", Versions: []int{1, 11, 13, 18}, New: newReduce(redMean, 18)})
	RegisterOp(OpDef{Name: "ReduceMax", Versions: []int{1, 11, 12, 13, 18}, New: newReduce(redMax, 18)})
	RegisterOp(OpDef{Name: "ReduceMin", Versions: []int{1, 11, 12, 13, 18}, New: newReduce(redMin, 18)})
	RegisterOp(OpDef{Name: "ReduceProd", Versions: []int{1, 11, 13, 18}, New: newReduce(redProd, 18)})
	RegisterOp(OpDef{Name: "ReduceSumSquare", Versions: []int{1, 11, 13, 18}, New: newReduce(redSumSquare, 18)})
	RegisterOp(OpDef{Name: "ReduceL1", Versions: []int{1, 11, 13, 18}, New: newReduce(redL1, 18)})
	RegisterOp(OpDef{Name: "ReduceL2", Versions: []int{1, 11, 13, 18}, New: newReduce(redL2, 18)})
	RegisterOp(OpDef{Name: "ReduceLogSum", Versions: []int{1, 11, 13, 18}, New: newReduce(redLogSum, 18)})
	RegisterOp(OpDef{Name: "ReduceLogSumExp", Versions: []int{1, 11, 13, 18}, New: newReduce(redLogSumExp, 18)})
}

type redOp uint8

const (
	redSum redOp = iota
	redMean
	redMax
	redMin
	redProd
	redSumSquare
	redL1
	redL2
	redLogSum
	redLogSumExp
)

type reduceKernel struct {
	op        redOp
	name      string
	axesInput bool    // the axes are input 1 (else the attribute)
	axes      []int64 // the attribute
	keepdims  bool
	noop      bool        // noop_with_empty_axes
	plans     reducePlans // float32's plan, kept (reduce_fast.go)
}

func newReduce(op redOp, axesInput int) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		k := &reduceKernel{op: op, name: n.Op, axesInput: n.Since >= axesInput}
		a := n.Attrs
		k.keepdims = a.Int("keepdims", 1) != 0
		if k.axesInput {
			k.noop = a.Int("noop_with_empty_axes", 0) != 0
			return k, n.CheckArity(1, 2, 1, 1)
		}
		k.axes, _ = a.Ints("axes")
		return k, n.CheckArity(1, 1, 1, 1)
	}
}

// reduced returns which of the rank dimensions are reduced, for the axes
// given (nil: none given).
func (k *reduceKernel) reduced(axes []int64, rank int) ([]bool, error) {
	red := make([]bool, rank)
	if len(axes) == 0 {
		if !k.noop {
			for i := range red {
				red[i] = true
			}
		}
		return red, nil
	}
	norm, err := NormAxes(axes, rank)
	if err != nil {
		return nil, err
	}
	for _, a := range norm {
		red[a] = true
	}
	return red, nil
}

// axesOf returns the axes of a node given its inputs' metas.
func (k *reduceKernel) axesOf(in []Meta) ([]int64, error) {
	if !k.axesInput || len(in) < 2 || in[1].Type == nd.Undefined {
		return k.axes, nil
	}
	if in[1].Type != nd.Int64 {
		return nil, fmt.Errorf("axes is %v: %s takes int64 axes", in[1].Type, k.name)
	}
	if len(in[1].Shape) > 1 {
		return nil, fmt.Errorf("axes has shape %s: %s takes a list of axes", nd.ShapeString(in[1].Shape), k.name)
	}
	v, ok := in[1].Known()
	if !ok {
		return nil, NeedValue(1)
	}
	return v, nil
}

func (k *reduceKernel) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	if !isNumeric(x.Type) {
		return nil, fmt.Errorf("%s of %v: takes a number type", k.name, x.Type)
	}
	if k.op == redLogSumExp && !x.Type.IsFloat() {
		return nil, fmt.Errorf("%s of %v: takes a float type", k.name, x.Type)
	}
	axes, err := k.axesOf(in)
	if err != nil {
		return nil, err
	}
	red, err := k.reduced(axes, len(x.Shape))
	if err != nil {
		return nil, err
	}
	var out []int
	for i, d := range x.Shape {
		switch {
		case !red[i]:
			out = append(out, d)
		case k.keepdims:
			out = append(out, 1)
		}
	}
	if out == nil {
		out = []int{}
	}
	return []Meta{{Type: x.Type, Shape: out}}, nil
}

func (k *reduceKernel) Run(in, out []nd.Array) error {
	if in[0].Type == nd.Float32 {
		p, err := k.plans.get(in[0], arrayAt(in, 1), func() ([]bool, error) { return k.reducedOf(in) })
		if err != nil {
			return err
		}
		if p.fast {
			reduceRun{p: p, op: k.op, x: in[0], y: out[0]}.runFloat32()
			return nil
		}
	}
	red, err := k.reducedOf(in)
	if err != nil {
		return err
	}
	f, err := numeric[reductionLoop](k.name, in[0].Type)
	if err != nil {
		return err
	}
	f.reduce(k.op, in[0], red, out[0])
	return nil
}

// reducedOf marks the dimensions of X that the run's axes reduce.
func (k *reduceKernel) reducedOf(in []nd.Array) ([]bool, error) {
	metas := make([]Meta, len(in))
	for i, a := range in {
		metas[i] = Meta{Type: a.Type, Shape: a.Shape, Value: &in[i]}
	}
	axes, err := k.axesOf(metas)
	if err != nil {
		return nil, err
	}
	return k.reduced(axes, len(in[0].Shape))
}

type reductionLoop interface {
	reduce(op redOp, x nd.Array, red []bool, y nd.Array)
}

// reduce sums in W, the widest type of T's kind.
func (numbers[T, W]) reduce(op redOp, x nd.Array, red []bool, y nd.Array) {
	reduceTyped[T, W](op, x, red, y)
}

// reduceTyped reduces x over the dimensions marked in red into y; A is the
// sum's accumulator type (ReduceMax and ReduceMin compare in T).
func reduceTyped[T numElem, A wideElem](op redOp, x nd.Array, red []bool, y nd.Array) {
	if op == redMax || op == redMin {
		reduceLoop[T, T](op, nd.MustAs[T](x), x.Shape, red, nd.MustAs[T](y))
		return
	}
	reduceLoop[T, A](op, nd.MustAs[T](x), x.Shape, red, nd.MustAs[T](y))
}

// reduceLoop reduces xs of shape into ys, accumulating in A. The shape is
// simplified first: dimensions of 1 dropped, neighbours of one kind
// (reduced or kept) merged. Then either the last dimension is reduced (a
// row of contiguous values per output, e.g. over the last axis) or it is
// kept (whole rows of outputs accumulated at once, e.g. over the first
// axis), both without strided reads in the inner loop.
func reduceLoop[T numElem, A numElem](op redOp, xs []T, shape []int, red []bool, ys []T) {
	if len(ys) == 0 {
		return
	}
	var dims []int
	var flags []bool
	count := 1 // values per output
	for i, d := range shape {
		if red[i] {
			count *= d
		}
		if d == 1 {
			continue
		}
		if n := len(dims); n > 0 && flags[n-1] == red[i] {
			dims[n-1] *= d
			continue
		}
		dims, flags = append(dims, d), append(flags, red[i])
	}
	init := A(0)
	switch op {
	case redMax:
		init = A(lowest[T]())
	case redMin:
		init = A(highest[T]())
	case redProd:
		init = 1
	}
	if len(xs) == 0 || len(dims) == 0 {
		// No values to reduce (a reduced dimension of 0), or nothing to
		// reduce (every dimension 1, or only kept ones).
		if len(xs) == 0 {
			for i := range ys {
				ys[i] = reduceResult[T](op, init, 0)
			}
			return
		}
		for i := range xs {
			ys[i] = reduceResult[T](op, reduceRow(op, xs[i:i+1], init), 1)
		}
		return
	}
	strides := Strides(dims)
	last := len(dims) - 1
	rowLen := dims[last]
	var kept, reducedDims []int
	for i := range dims {
		if flags[i] {
			reducedDims = append(reducedDims, i)
		} else {
			kept = append(kept, i)
		}
	}
	if flags[last] {
		// Each output reduces rows of rowLen contiguous values, at the
		// offsets roffs from its own.
		roffs := offsetsOf(dims, strides, reducedDims[:len(reducedDims)-1])
		koffs := offsetsOf(dims, strides, kept)
		parts := 1 // split long rows when outputs are too few for the cores
		if w := runtime.GOMAXPROCS(0); len(ys) < 2*w && rowLen >= 2*ewSegment {
			parts = min(2*w, rowLen/ewSegment)
		}
		if parts == 1 {
			parallel.For(len(ys), count, func(lo, hi int) {
				for o := lo; o < hi; o++ {
					acc := init
					for _, r := range roffs {
						acc = reduceRow(op, xs[koffs[o]+r:koffs[o]+r+rowLen], acc)
					}
					ys[o] = reduceResult[T](op, acc, count)
				}
			})
			return
		}
		seg := (rowLen + parts - 1) / parts
		partial := make([]A, len(ys)*parts)
		parallel.For(len(partial), count/parts, func(lo, hi int) {
			for t := lo; t < hi; t++ {
				o, p := t/parts, t%parts
				j0, j1 := min(rowLen, p*seg), min(rowLen, (p+1)*seg)
				acc := init
				for _, r := range roffs {
					acc = reduceRow(op, xs[koffs[o]+r+j0:koffs[o]+r+j1], acc)
				}
				partial[t] = acc
			}
		})
		for o := range ys {
			acc := init
			for _, v := range partial[o*parts : (o+1)*parts] {
				acc = combine(op, acc, v)
			}
			ys[o] = reduceResult[T](op, acc, count)
		}
		return
	}
	// The last dimension is kept: each output row (rowLen outputs)
	// accumulates rows of the input at the offsets roffs from its own.
	roffs := offsetsOf(dims, strides, reducedDims)
	koffs := offsetsOf(dims, strides, kept[:len(kept)-1])
	split := (rowLen + ewSegment - 1) / ewSegment
	seg := (rowLen + split - 1) / split
	parallel.For(len(koffs)*split, seg*len(roffs), func(lo, hi int) {
		acc := make([]A, seg)
		for t := lo; t < hi; t++ {
			o, p := t/split, t%split
			j0, j1 := p*seg, min(rowLen, (p+1)*seg)
			a := acc[:j1-j0]
			for i := range a {
				a[i] = init
			}
			for _, r := range roffs {
				reduceInto(op, a, xs[koffs[o]+r+j0:koffs[o]+r+j1])
			}
			out := ys[o*rowLen+j0 : o*rowLen+j1]
			for i, v := range a {
				out[i] = reduceResult[T](op, v, count)
			}
		}
	})
}

// offsetsOf lists the offsets (with strides) of every index of the
// dimensions which of dims, in row-major order: one offset, 0, for none.
func offsetsOf(dims, strides, which []int) []int {
	offs := []int{0}
	for _, d := range which {
		next := make([]int, 0, len(offs)*dims[d])
		for _, o := range offs {
			for i := range dims[d] {
				next = append(next, o+i*strides[d])
			}
		}
		offs = next
	}
	return offs
}

// reduceRow folds the values x into acc.
func reduceRow[T, A numElem](op redOp, x []T, acc A) A {
	switch op {
	case redMax:
		for _, v := range x {
			acc = maxNaN(acc, A(v))
		}
		return acc
	case redMin:
		for _, v := range x {
			acc = minNaN(acc, A(v))
		}
		return acc
	case redProd:
		for _, v := range x {
			acc *= A(v)
		}
		return acc
	case redSumSquare, redL2:
		var s0, s1 A
		i := 0
		for ; i+2 <= len(x); i += 2 {
			a, b := A(x[i]), A(x[i+1])
			s0 += a * a
			s1 += b * b
		}
		for ; i < len(x); i++ {
			a := A(x[i])
			s0 += a * a
		}
		return acc + (s0 + s1)
	case redL1:
		for _, v := range x {
			a := A(v)
			if a < 0 {
				a = -a
			}
			acc += a
		}
		return acc
	case redLogSumExp:
		if x32, ok := any(x).([]float32); ok {
			var t [256]float32
			var e [256]float64
			for lo := 0; lo < len(x32); lo += len(t) {
				for _, v := range exp32Block(x32[lo:min(len(x32), lo+len(t))], t[:], e[:]) {
					acc += A(v)
				}
			}
			return acc
		}
		for _, v := range x {
			acc += A(math.Exp(float64(v)))
		}
		return acc
	}
	// Four sums: the additions of one do not wait for the others'.
	var s0, s1, s2, s3 A
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += A(x[i])
		s1 += A(x[i+1])
		s2 += A(x[i+2])
		s3 += A(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += A(x[i])
	}
	return acc + ((s0 + s1) + (s2 + s3))
}

// reduceInto folds x into acc elementwise.
func reduceInto[T, A numElem](op redOp, acc []A, x []T) {
	x = x[:len(acc)]
	switch op {
	case redMax:
		for i, v := range x {
			acc[i] = maxNaN(acc[i], A(v))
		}
		return
	case redMin:
		for i, v := range x {
			acc[i] = minNaN(acc[i], A(v))
		}
		return
	case redProd:
		for i, v := range x {
			acc[i] *= A(v)
		}
		return
	case redSumSquare, redL2:
		for i, v := range x {
			a := A(v)
			acc[i] += a * a
		}
		return
	case redL1:
		for i, v := range x {
			a := A(v)
			if a < 0 {
				a = -a
			}
			acc[i] += a
		}
		return
	case redLogSumExp:
		if x32, ok := any(x).([]float32); ok {
			var t [256]float32
			var e [256]float64
			for lo := 0; lo < len(x32); lo += len(t) {
				a := acc[lo:min(len(x32), lo+len(t))]
				for i, v := range exp32Block(x32[lo:lo+len(a)], t[:], e[:]) {
					a[i] += A(v)
				}
			}
			return
		}
		for i, v := range x {
			acc[i] += A(math.Exp(float64(v)))
		}
		return
	}
	if a64, ok := any(acc).([]float64); ok { // float32 sums on the vector kernel
		if x32, ok := any(x).([]float32); ok {
			i := accF32Vec(a64, x32)
			acc, x = acc[i:], x[i:]
		}
	}
	for i, v := range x {
		acc[i] += A(v)
	}
}

// combine folds two partial results.
func combine[A numElem](op redOp, a, b A) A {
	switch op {
	case redMax:
		return maxNaN(a, b)
	case redMin:
		return minNaN(a, b)
	case redProd:
		return a * b
	}
	return a + b
}

// reduceResult is the output of an accumulator over count values.
func reduceResult[T, A numElem](op redOp, acc A, count int) T {
	switch op {
	case redL2:
		return T(math.Sqrt(float64(acc)))
	case redLogSum, redLogSumExp:
		return T(math.Log(float64(acc)))
	}
	if op != redMean {
		return T(acc)
	}
	half := 0.5
	if count == 0 && A(half) == 0 { // an integer mean of nothing
		return 0
	}
	return T(acc / A(count))
}

// exp32Block returns e^x of a block of x (at most len(t) = len(e)
// values) in e, in float64: expf's vector loop into t, and math.Exp where
// that overflows or comes below 1e-30 (float64's range is wider: the sums
// stay as the float64 loop makes them).
func exp32Block(xs, t []float32, e []float64) []float64 {
	t, e = t[:len(xs)], e[:len(xs)]
	expSubInto(t, xs, 0)
	for i, v := range t {
		e[i] = float64(v)
		if !(v >= 1e-30 && v <= math.MaxFloat32) && v == v {
			e[i] = math.Exp(float64(xs[i]))
		}
	}
	return e
}
