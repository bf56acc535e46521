package onnx

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// BatchNormalization (opsets 1, 6, 7, 9, 14, 15) and LayerNormalization
// (17).
//
// BatchNormalization normalises each channel of X (N x C x D1 ...) with
// the given mean and variance: Y = (X - mean) / sqrt(var + epsilon) *
// scale + B. Before opset 9 spatial=0 gives every activation (C x D1 ...)
// its own statistics; 1 and 6 have is_test, 1 consumed_inputs (ignored).
// In training mode (training_mode=1 from 14; before, asking for the
// outputs past Y) the statistics are the batch's (biased variance) and the
// running ones are output as input x momentum + batch x (1 - momentum);
// before 14 two more outputs, saved_mean and saved_var, are the batch's
// mean and variance. 15 lets scale, B and the statistics have float types
// other than X's.
//
// LayerNormalization normalises X over its axes from axis on (stash_type
// 1: in float32 or better; the sums run in float64) and outputs Mean and
// InvStdDev (float32, X's shape with those axes 1) when asked; Scale and B
// broadcast to X.

func init() {
	RegisterOp(OpDef{Name: "BatchNormalization", Versions: []int{1, 6, 7, 9, 14, 15}, New: newBatchNorm})
	RegisterOp(OpDef{Name: "LayerNormalization", Versions: []int{17}, New: newLayerNorm})
}

type batchNorm struct {
	since    int
	epsilon  float64
	momentum float64
	spatial  bool
	training bool
}

func newBatchNorm(n *Node) (Kernel, error) {
	maxOut := 5
	if n.Since >= 14 {
		maxOut = 3
	}
	if err := n.CheckArity(5, 5, 1, maxOut); err != nil {
		return nil, err
	}
	a := n.Attrs
	k := &batchNorm{since: n.Since, epsilon: float64(a.Float("epsilon", 1e-5)), momentum: float64(a.Float("momentum", 0.9)), spatial: true}
	if n.Since == 1 {
		a.Ignore("consumed_inputs")
	}
	if n.Since < 9 {
		k.spatial = a.Flag("spatial", true)
	}
	extra := false
	for i := 1; i < len(n.Outputs); i++ {
		extra = extra || n.HasOutput(i)
	}
	switch {
	case n.Since >= 14:
		k.training = a.Flag("training_mode", false)
		if extra && !k.training {
			return nil, errors.New("outputs running_mean and running_var are only computed with training_mode=1")
		}
	default:
		isTest := int64(0)
		if n.Since < 7 {
			isTest = a.Int("is_test", 0)
		}
		k.training = extra
		if extra && isTest != 0 {
			return nil, errors.New("is_test=1, but the training outputs (mean, var, saved_mean, saved_var) are asked for")
		}
	}
	return k, a.Err()
}

// bnShape checks X's and the parameters' shapes; it returns C and the
// size of each parameter's plane (1 when spatial, else the activations
// per channel).
func (k *batchNorm) shape(x []int, params ...[]int) (c, per, inner int, err error) {
	if len(x) < 2 {
		return 0, 0, 0, fmt.Errorf("input X has shape %s: want N x C [x D1 ...]", nd.ShapeString(x))
	}
	c = x[1]
	inner = numel(x[2:])
	per = 1
	if !k.spatial {
		per = inner
	}
	names := []string{"scale", "B", "mean", "var"}
	for i, p := range params {
		if k.spatial && (len(p) != 1 || p[0] != c) {
			return 0, 0, 0, fmt.Errorf("input %s has shape %s, want [%d] (X's channels)", names[i], nd.ShapeString(p), c)
		}
		if !k.spatial && numel(p) != c*per {
			return 0, 0, 0, fmt.Errorf("input %s has shape %s, want %s (spatial=0: X's shape past N)", names[i], nd.ShapeString(p), nd.ShapeString(x[1:]))
		}
	}
	return c, per, inner, nil
}

func (k *batchNorm) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	if x.Type != nd.Float32 && x.Type != nd.Float64 {
		return nil, fmt.Errorf("input X is %v: BatchNormalization takes float32 or float64", x.Type)
	}
	names := []string{"X", "scale", "B", "mean", "var"}
	for i := 1; i < 5; i++ {
		t := in[i].Type
		if t != nd.Float32 && t != nd.Float64 {
			return nil, fmt.Errorf("input %s is %v: want float32 or float64", names[i], t)
		}
		// Which inputs share a type: all before 14; X, scale and B in 14
		// (mean and var apart); scale with B and mean with var in 15.
		same := 0
		switch {
		case k.since < 14 || (k.since == 14 && i < 3):
		case k.since == 14 && i == 4, k.since >= 15 && i%2 == 0:
			same = i - 1
		default:
			continue
		}
		if t != in[same].Type {
			return nil, fmt.Errorf("input %s is %v, %s %v: in opset %d they have one type", names[same], in[same].Type, names[i], t, k.since)
		}
	}
	c, per, _, err := k.shape(x.Shape, in[1].Shape, in[2].Shape, in[3].Shape, in[4].Shape)
	if err != nil {
		return nil, err
	}
	out := []Meta{{Type: x.Type, Shape: x.Shape}}
	stat := Meta{Type: in[3].Type, Shape: in[3].Shape}
	out = append(out, stat, stat)
	if k.since < 14 {
		saved := Meta{Type: in[3].Type, Shape: []int{c * per}}
		if k.spatial {
			saved.Shape = []int{c}
		}
		out = append(out, saved, saved)
	}
	return out, nil
}

func (k *batchNorm) Run(in, out []nd.Array) error {
	x := in[0]
	c, per, inner, err := k.shape(x.Shape, in[1].Shape, in[2].Shape, in[3].Shape, in[4].Shape)
	if err != nil {
		return err
	}
	scale, bias, mean, variance := nd.Float64s(in[1]), nd.Float64s(in[2]), nd.Float64s(in[3]), nd.Float64s(in[4])
	n := x.Shape[0]
	if k.training {
		mean, variance = k.batchStats(x, n, c, per, inner)
		for i := 1; i < len(out); i++ {
			if out[i].Type == nd.Undefined {
				continue
			}
			var v []float64
			switch i {
			case 1, 2:
				run, batch := nd.Float64s(in[2+i]), mean
				if i == 2 {
					batch = variance
				}
				v = make([]float64, len(run))
				for j := range v {
					v[j] = run[j]*k.momentum + batch[j]*(1-k.momentum)
				}
			case 3:
				v = mean
			case 4:
				v = variance
			}
			f, err := floating[batchNormLoop]("BatchNormalization", out[i].Type)
			if err != nil {
				return err
			}
			f.setFloats(out[i], v)
		}
	}
	// y = x * a + b per channel (or activation).
	a, b := make([]float64, c*per), make([]float64, c*per)
	for i := range a {
		a[i] = scale[i] / math.Sqrt(variance[i]+k.epsilon)
		b[i] = bias[i] - mean[i]*a[i]
	}
	f, err := floating[batchNormLoop]("BatchNormalization", x.Type)
	if err != nil {
		return err
	}
	f.affine(x, out[0], n, c, per, inner, a, b)
	return nil
}

type batchNormLoop interface {
	affine(x, y nd.Array, n, c, per, inner int, a, b []float64)
	setFloats(a nd.Array, v []float64)
}

func (floats[T]) affine(x, y nd.Array, n, c, per, inner int, a, b []float64) {
	affinePlanes(nd.MustAs[T](x), nd.MustAs[T](y), n, c, per, inner, floatsAs[T](a), floatsAs[T](b))
}

// setFloats writes v into a.
func (floats[T]) setFloats(a nd.Array, v []float64) { copy(nd.MustAs[T](a), floatsAs[T](v)) }

// affinePlanes computes y = x*a + b over n x c planes of inner elements,
// a and b indexed by channel (per == 1) or by channel and element (per ==
// inner).
func affinePlanes[T float32 | float64](x, y []T, n, c, per, inner int, a, b []T) {
	parallel.For(n*c, inner, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			ch := t % c
			xs, ys := x[t*inner:(t+1)*inner], y[t*inner:(t+1)*inner]
			if per == 1 {
				av, bv := a[ch], b[ch]
				for i, v := range xs {
					ys[i] = v*av + bv
				}
				continue
			}
			as, bs := a[ch*per:(ch+1)*per], b[ch*per:(ch+1)*per]
			for i, v := range xs {
				ys[i] = v*as[i] + bs[i]
			}
		}
	})
}

// batchStats returns the batch's mean and (biased) variance per channel (or
// activation), in float64.
func (k *batchNorm) batchStats(x nd.Array, n, c, per, inner int) (mean, variance []float64) {
	mean, variance = make([]float64, c*per), make([]float64, c*per)
	xs := nd.Float64s(x)
	cnt := float64(n * inner / per)
	parallel.For(c, n*inner, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			for img := range n {
				plane := xs[(img*c+ch)*inner : (img*c+ch+1)*inner]
				for i, v := range plane {
					mean[ch*per+i%per] += v
				}
			}
			for j := ch * per; j < (ch+1)*per; j++ {
				mean[j] /= cnt
			}
			for img := range n {
				plane := xs[(img*c+ch)*inner : (img*c+ch+1)*inner]
				for i, v := range plane {
					d := v - mean[ch*per+i%per]
					variance[ch*per+i%per] += d * d
				}
			}
			for j := ch * per; j < (ch+1)*per; j++ {
				variance[j] /= cnt
			}
		}
	})
	return mean, variance
}

type layerNorm struct {
	axis    int
	epsilon float64
}

func newLayerNorm(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 3, 1, 3); err != nil {
		return nil, err
	}
	a := n.Attrs
	k := &layerNorm{axis: int(a.Int("axis", -1)), epsilon: float64(a.Float("epsilon", 1e-5))}
	if st := a.Int("stash_type", 1); st != 1 {
		a.Fail("attribute stash_type is %d: only 1 (float) is supported", st)
	}
	return k, a.Err()
}

// shape returns the normalised axes' start, and the rows and their size.
func (k *layerNorm) shape(x, scale, b []int, hasB bool) (axis, rows, size int, err error) {
	axis, err = NormAxis(k.axis, len(x))
	if err != nil {
		return 0, 0, 0, err
	}
	if !unidirectional(scale, x) {
		return 0, 0, 0, fmt.Errorf("input Scale has shape %s, which does not broadcast to X's %s", nd.ShapeString(scale), nd.ShapeString(x))
	}
	if hasB && !unidirectional(b, x) {
		return 0, 0, 0, fmt.Errorf("input B has shape %s, which does not broadcast to X's %s", nd.ShapeString(b), nd.ShapeString(x))
	}
	return axis, numel(x[:axis]), numel(x[axis:]), nil
}

func (k *layerNorm) Infer(in []Meta) ([]Meta, error) {
	x, scale, b := in[0], in[1], metaAt(in, 2)
	if x.Type != nd.Float32 && x.Type != nd.Float64 {
		return nil, fmt.Errorf("input X is %v: LayerNormalization takes float32 or float64", x.Type)
	}
	if scale.Type != x.Type || (b.Type != nd.Undefined && b.Type != x.Type) {
		return nil, sameTypeErr([]string{"X", "Scale", "B"}, x, scale, b)
	}
	axis, _, _, err := k.shape(x.Shape, scale.Shape, b.Shape, b.Type != nd.Undefined)
	if err != nil {
		return nil, err
	}
	stat := append([]int{}, x.Shape...)
	for i := axis; i < len(stat); i++ {
		stat[i] = 1
	}
	return []Meta{{Type: x.Type, Shape: x.Shape}, {Type: nd.Float32, Shape: stat}, {Type: nd.Float32, Shape: stat}}, nil
}

func (k *layerNorm) Run(in, out []nd.Array) error {
	x, scale, b := in[0], in[1], arrayAt(in, 2)
	hasB := b.Type != nd.Undefined
	axis, rows, size, err := k.shape(x.Shape, scale.Shape, b.Shape, hasB)
	if err != nil {
		return err
	}
	var mean, inv []float32
	if o := arrayAt(out, 1); o.Type != nd.Undefined {
		mean = nd.MustAs[float32](o)
	}
	if o := arrayAt(out, 2); o.Type != nd.Undefined {
		inv = nd.MustAs[float32](o)
	}
	p := lnProblem{rows: rows, size: size, eps: k.epsilon, mean: mean, inv: inv}
	// Scale and B as X's shape reads them: offsets for the row (outer)
	// and the element within it (inner); nil inner when they are the
	// normalised shape itself.
	p.sOuter, p.sInner = broadcastIndex(scale.Shape, x.Shape, axis)
	if hasB {
		p.bOuter, p.bInner = broadcastIndex(b.Shape, x.Shape, axis)
	}
	// Not through floating's loops: a function value made in generic code
	// is a closure over its dictionary, allocated at each run.
	r := lnRun{p: p, x: x, scale: scale, b: b, y: out[0]}
	switch x.Type {
	case nd.Float32:
		parallel.ForWith(rows, 3*size, r, layerNormRange[float32])
	case nd.Float64:
		parallel.ForWith(rows, 3*size, r, layerNormRange[float64])
	default:
		_, err := floating[any]("LayerNormalization", x.Type)
		return err
	}
	return nil
}

// lnRun is a run of LayerNormalization: its problem and arrays.
type lnRun struct {
	p              lnProblem
	x, scale, b, y nd.Array
}

// layerNormRange normalises rows lo..hi of r.
func layerNormRange[T float32 | float64](r *lnRun, lo, hi int) {
	layerNormRowsIn(r.p, nd.MustAs[T](r.x), nd.MustAs[T](r.scale), asOr[T](r.b), nd.MustAs[T](r.y), lo, hi)
}

// broadcastIndex returns, for an array of shape s broadcast to shape x
// split at axis, the offset of each row (nil: all 0) and of each element
// within a row (nil: the element's own index).
func broadcastIndex(s, x []int, axis int) (outer, inner []int) {
	st := BroadcastStrides(s, x)
	rows, size := numel(x[:axis]), numel(x[axis:])
	identity := true
	want := 1
	for d := len(x) - 1; d >= axis; d-- {
		if st[d] != want && x[d] != 1 {
			identity = false
		}
		want *= x[d]
	}
	if !identity {
		inner = offsets(x[axis:], st[axis:], size)
	}
	for _, v := range st[:axis] {
		if v != 0 {
			outer = offsets(x[:axis], st[:axis], rows)
			break
		}
	}
	return outer, inner
}

// offsets lists the offsets (sum of index x stride) of the n elements of
// shape in row-major order.
func offsets(shape, strides []int, n int) []int {
	out := make([]int, n)
	idx := make([]int, len(shape))
	off := 0
	for i := range out {
		out[i] = off
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < shape[d] {
				break
			}
			off -= idx[d] * strides[d]
			idx[d] = 0
		}
	}
	return out
}

type lnProblem struct {
	rows, size     int
	eps            float64
	mean, inv      []float32
	sOuter, sInner []int
	bOuter, bInner []int
}

// layerNormRowsIn normalises rows lo..hi of x into y.
func layerNormRowsIn[T float32 | float64](p lnProblem, x, scale, bias, y []T, lo, hi int) {
	size := p.size
	if p.mean == nil && p.inv == nil && p.sOuter == nil && p.sInner == nil && p.bOuter == nil && p.bInner == nil {
		// One scale and bias for every row, no statistics out: float32 rows
		// many at a call.
		if x32, ok := asF32(x[lo*size : hi*size]); ok {
			y32, _ := asF32(y[lo*size : hi*size])
			s32, _ := asF32(scale)
			b32, _ := asF32(bias)
			layerNormRowsF32(x32, y32, s32, b32, size, p.eps)
			return
		}
	}
	for r := lo; r < hi; r++ {
		xs, ys := x[r*size:(r+1)*size], y[r*size:(r+1)*size]
		mean, inv := meanInv(xs, p.eps)
		if p.mean != nil {
			p.mean[r] = float32(mean)
		}
		if p.inv != nil {
			p.inv[r] = float32(inv)
		}
		m, iv := T(mean), T(inv)
		so, bo := 0, 0
		if p.sOuter != nil {
			so = p.sOuter[r]
		}
		if p.bOuter != nil {
			bo = p.bOuter[r]
		}
		if p.sInner == nil && (bias == nil || p.bInner == nil) {
			var bs []T
			if bias != nil {
				bs = bias[bo : bo+size]
			}
			normRow(xs, ys, scale[so:so+size], bs, m, iv)
			continue
		}
		for i, v := range xs {
			si, bi := i, i
			if p.sInner != nil {
				si = p.sInner[i]
			}
			o := (v - m) * iv * scale[so+si]
			if bias != nil {
				if p.bInner != nil {
					bi = p.bInner[i]
				}
				o += bias[bo+bi]
			}
			ys[i] = o
		}
	}
}

// meanInv returns the mean of a row of LayerNormalization and the inverse
// of its standard deviation (its variance plus eps under the root), in
// float64: a float32 row's sums on the normalizations' vector kernels
// (sum4, sqDev4: eight partial sums where AVX2 runs, four elsewhere, as
// InstanceNormalization's), a float64 row's in four partial sums.
func meanInv[T float32 | float64](xs []T, eps float64) (mean, inv float64) {
	if x32, ok := asF32(xs); ok { // float32 rows on the normalizations' vector kernels
		mean = sum4(x32) / float64(len(xs))
		return mean, 1 / math.Sqrt(sqDev4(x32, mean)/float64(len(xs))+eps)
	}
	mean = sumFloat64(xs) / float64(len(xs))
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		d0, d1, d2, d3 := float64(xs[i])-mean, float64(xs[i+1])-mean, float64(xs[i+2])-mean, float64(xs[i+3])-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(xs); i++ {
		d := float64(xs[i]) - mean
		s0 += d * d
	}
	return mean, 1 / math.Sqrt((s0+s1+s2+s3)/float64(len(xs))+eps)
}

// normRow writes (x - m) * iv * scale (+ bias, where bias is not nil) of
// the row xs to ys (ys may be xs).
func normRow[T float32 | float64](xs, ys, scale, bias []T, m, iv T) {
	if x32, ok := asF32(xs); ok { // the whole vectors on a kernel, the same bits
		y32, _ := asF32(ys)
		s32, _ := asF32(scale)
		b32, _ := asF32(bias)
		i := normRowVec(x32, y32, s32, b32, float32(m), float32(iv))
		xs, ys, scale = xs[i:], ys[i:], scale[i:]
		if bias != nil {
			bias = bias[i:]
		}
	}
	sc := scale[:len(xs)]
	if bias == nil {
		for i, v := range xs {
			ys[i] = (v - m) * iv * sc[i]
		}
		return
	}
	bs := bias[:len(xs)]
	for i, v := range xs {
		ys[i] = (v-m)*iv*sc[i] + bs[i]
	}
}

// asF32 is s as float32s when T is float32 (ok), without a copy or an
// allocation (an interface conversion in generic code allocates); nil s
// stays nil.
func asF32[T float32 | float64](s []T) ([]float32, bool) {
	var z T
	if unsafe.Sizeof(z) != 4 {
		return nil, false
	}
	if s == nil {
		return nil, true
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s)), true
}

// layerNormRowsF32 normalises x's float32 rows of n into y's (y may be x)
// as LayerNormalization does with Scale and B of a row's shape (bias nil:
// none), the bits of meanInv and normRow: a fused step's
// (ops_matmul_fused.go, ops_norm_fused.go) and the operator's with one
// scale for every row, many rows at a call of the vector kernel where
// there is one.
func layerNormRowsF32(x, y, scale, bias []float32, n int, eps float64) {
	if n == 0 || layerNormRowsVec(x, y, scale, bias, n, eps) {
		return
	}
	for r := 0; r+n <= len(x); r += n {
		mean, inv := meanInv(x[r:r+n], eps)
		normRow(x[r:r+n], y[r:r+n], scale, bias, float32(mean), float32(inv))
	}
}
