package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Fused attention: the five operators of scaled dot-product attention as
// exporters write it, MatMul(Q, Kᵀ) -> Div or Mul by a scalar -> Add of a
// mask -> Softmax along the last axis -> MatMul(·, V) (the scale and the
// mask each optional), with the Transposes that split the heads before it
// and merge them after, planned as one step (plan_fuse.go), as ONNX
// Runtime's Attention fusion
// (https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html).
// On the CPU each task takes a block of query rows of one head: its scores
// (rows x keys) in a buffer of the task's own, scaled, masked, their
// softmaxes, and their product with V, written to the output while the
// scores are in cache, reading Q, K and V and writing the output where
// the heads lie (gemm's strides), so that neither the transposed copies
// nor the batch x heads x queries x keys score tensor is ever made (at 32
// x 12 x 512 x 512 it would be 400 MB, four times over unfused). Each operation is the operator's own (the products' rows are
// the unfused products' rows, the softmax is Softmax's), so the outputs
// are the unfused plan's bit for bit. On the device the same operators'
// launches run over a score buffer of a bounded number of batches at a time
// (ops_attention_fused_gpu.go).

// fusedAttention is the kernel of a fused attention step: inputs Q, Kᵀ,
// the scale (a float32 scalar; left out without one), the mask (left out
// without one) and V, each of Q, Kᵀ and V the value its Transpose reads
// where the step reads through one; one output.
type fusedAttention struct {
	// through are the Transposes the step reads Q, Kᵀ and V through and
	// writes its output through (a nil kernel: none): a transformer's
	// head split, [batch, tokens, heads, d] to [batch, heads, tokens, d],
	// and the merge after. The products read and write the heads where
	// they lie, with strides, and the transposed copies are never made.
	through [4]*transpose
	qk, pv  *matMul
	// scale is Div or Mul by the scalar, scaleFirst when the scalar is
	// the first operand (Mul(c, x)); nil: none.
	scale      *ewBinary
	scaleFirst bool
	// mask is the Add of the mask, maskFirst when it is the first operand.
	mask      *ewBinary
	maskFirst bool
	softmax   *softmaxKernel
	plans     byShapes[*attentionPlan] // the run's geometry, kept
}

// attentionPlan is what a run derives from its shapes: the operands' ld,
// layout and batch offsets (their data unset), the mask's strides and
// batch offsets, the products' sizes and the blocks of query rows.
type attentionPlan struct {
	q, kt, v, y          matOperand
	maskBase             []int
	rowStride, colStride int
	m, n, d, dv, nb      int
	block, blocks        int
}

// attentionShapes are the products' shapes: scores = Q Kᵀ, out = P V.
func attentionShapes(q, kt, v []int) (qk, pv mmShape, err error) {
	if qk, err = matMulShape(q, kt); err != nil {
		return qk, pv, err
	}
	if pv, err = matMulShape(qk.out, v); err != nil {
		return qk, pv, err
	}
	if len(qk.out) < 2 || len(pv.out) != len(qk.out) {
		return qk, pv, fmt.Errorf("attention: scores %v and output %v", qk.out, pv.out)
	}
	return qk, pv, nil
}

// logical returns the shape and the element strides of input i's (Q, Kᵀ,
// V) matrix operand as the products read it: the value's own (shape x),
// or through its Transpose.
func (k *fusedAttention) logical(i int, x []int) (shape, strides []int, err error) {
	st := Strides(x)
	t := k.through[i]
	if t == nil {
		return x, st, nil
	}
	perm, err := t.permOf(len(x))
	if err != nil {
		return nil, nil, err
	}
	shape, strides = make([]int, len(x)), make([]int, len(x))
	for a, p := range perm {
		shape[a], strides[a] = x[p], st[p]
	}
	return shape, strides, nil
}

// shapes returns the products' shapes from the step's input shapes.
func (k *fusedAttention) shapes(q, kt, v []int) (qk, pv mmShape, err error) {
	var ls [3][]int
	for i, x := range [][]int{q, kt, v} {
		if ls[i], _, err = k.logical(i, x); err != nil {
			return qk, pv, err
		}
	}
	return attentionShapes(ls[0], ls[1], ls[2])
}

// outShape is the step's output shape: P V's, or its Transpose's.
func (k *fusedAttention) outShape(pv mmShape) ([]int, error) {
	t := k.through[3]
	if t == nil {
		return pv.out, nil
	}
	perm, err := t.permOf(len(pv.out))
	if err != nil {
		return nil, err
	}
	out := make([]int, len(perm))
	for a, p := range perm {
		out[a] = pv.out[p]
	}
	return out, nil
}

func (k *fusedAttention) Infer(in []Meta) ([]Meta, error) {
	_, pv, err := k.shapes(in[0].Shape, in[1].Shape, in[4].Shape)
	if err != nil {
		return nil, err
	}
	out, err := k.outShape(pv)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: nd.Float32, Shape: out}}, nil
}

// attentionRowBytes is the scores a task holds: a block of query rows
// whose scores (and their softmaxes, as many again) stay in a core's L2
// cache (512 KiB to 2 MiB) from the product to the softmax and the product
// with V. Each task packs its
// head's K and V for gemm, so fewer blocks a head pack them fewer times:
// vit_b_16 at batch 4 (197 tokens: 64 KiB took a head in 3 blocks, 256 KiB
// in one), its 12 attention steps at one thread 91.7, 91.9 -> 80.3, 81.2
// ms, at two threads 52.1, 48.5 -> 43.1, 41.5 (fastest of 40 a step,
// alternating binaries).
const attentionRowBytes = 256 << 10

// A matrix operand as gemm reads it: each product's matrix at off[b] of
// data, rows ld apart (trans: columns ld apart, rows adjacent).
type matOperand struct {
	data  []float32
	off   []int
	ld    int
	trans bool
}

// operand returns the matrix operand of logical shape and strides (a
// matrix's rows and columns last) for the products of batch (broadcast).
// ok is false when neither of the matrix's axes is contiguous.
func operand(data []float32, shape, strides, batch []int) (matOperand, bool) {
	r := len(shape)
	o := matOperand{data: data}
	rows, cols, rs, cs := shape[r-2], shape[r-1], strides[r-2], strides[r-1]
	switch {
	case cs == 1 || cols == 1:
		o.ld = rs
		if rows == 1 { // one row: any distance past its columns
			o.ld = max(rs, cols)
		}
	case rs == 1 || rows == 1:
		o.ld, o.trans = cs, true
	default:
		return o, false
	}
	bst := make([]int, len(batch)) // along the broadcast batch: 0 where broadcast
	for a := range r - 2 {
		if shape[a] != 1 {
			bst[len(batch)-(r-2)+a] = strides[a]
		}
	}
	o.off = batchBases(batch, bst)
	return o, true
}

// at returns the operand's matrix b from row i on (a row of its logical
// shape), for gemm.
func (o matOperand) at(b, i int) []float32 {
	if o.trans {
		return o.data[o.off[b]+i:]
	}
	return o.data[o.off[b]+i*o.ld:]
}

func (k *fusedAttention) Run(in, out []nd.Array) error {
	var maskShape []int
	if k.mask != nil {
		maskShape = in[3].Shape
	}
	ap, err := k.plans.get(func() (*attentionPlan, error) { return k.plan(in, out) }, in[0].Shape, in[1].Shape, in[4].Shape, maskShape, out[0].Shape)
	if err != nil || ap.m == 0 || ap.dv == 0 || ap.nb == 0 {
		return err
	}
	r := attentionRun{k: k, ap: ap, q: ap.q, kt: ap.kt, v: ap.v, y: ap.y}
	r.q.data, r.kt.data, r.v.data = nd.MustAs[float32](in[0]), nd.MustAs[float32](in[1]), nd.MustAs[float32](in[4])
	r.y.data = nd.MustAs[float32](out[0])
	if k.scale != nil {
		r.c = nd.MustAs[float32](in[2])[0]
	}
	if k.mask != nil {
		r.mask = nd.MustAs[float32](in[3])
	}
	tasks := ap.nb * ap.blocks
	parallel.EachWith(tasks, ap.block*ap.n*(ap.d+ap.dv), r, (*attentionRun).task)
	return nil
}

// plan derives the run's attentionPlan from its inputs' and output's
// shapes.
func (k *fusedAttention) plan(in, out []nd.Array) (*attentionPlan, error) {
	var ls, st [3][]int
	for i, x := range []nd.Array{in[0], in[1], in[4]} {
		var err error
		if ls[i], st[i], err = k.logical(i, x.Shape); err != nil {
			return nil, err
		}
	}
	qk, pv, err := attentionShapes(ls[0], ls[1], ls[2])
	if err != nil {
		return nil, err
	}
	yst := Strides(pv.out)
	if t := k.through[3]; t != nil { // P V's strides in its Transpose
		perm, err := t.permOf(len(pv.out))
		if err != nil {
			return nil, err
		}
		ost := Strides(out[0].Shape)
		for a, p := range perm {
			yst[p] = ost[a]
		}
	}
	ap := &attentionPlan{}
	for i, o := range []*matOperand{&ap.q, &ap.kt, &ap.v} {
		var ok bool
		if *o, ok = operand(nil, ls[i], st[i], qk.batch); !ok {
			return nil, fmt.Errorf("attention: input %d of shape %v: no contiguous axis", i, []nd.Array{in[0], in[1], in[4]}[i].Shape)
		}
	}
	y, ok := operand(nil, pv.out, yst, pv.batch)
	if !ok || y.trans {
		return nil, fmt.Errorf("attention: output of shape %v: rows not contiguous", out[0].Shape)
	}
	ap.y = y
	if k.mask != nil {
		st := BroadcastStrides(in[3].Shape, qk.out)
		r := len(qk.out)
		ap.rowStride, ap.colStride = st[r-2], st[r-1]
		ap.maskBase = batchBases(qk.batch, st[:r-2])
	}
	ap.m, ap.n, ap.d, ap.dv = qk.m, qk.n, qk.k, pv.n
	ap.nb = numel(qk.batch)
	ap.block = min(ap.m, max(8, attentionRowBytes/(4*max(ap.n, 1))))
	ap.blocks = (ap.m + ap.block - 1) / ap.block
	return ap, nil
}

// attentionRun is a run of a fused attention: its plan, its operands with
// their data, the scale and the mask.
type attentionRun struct {
	k           *fusedAttention
	ap          *attentionPlan
	q, kt, v, y matOperand
	c           float32
	mask        []float32
}

// task computes block t%blocks of query rows of batch t/blocks: their
// scores (a pooled buffer), scaled, masked and softmaxed into a second
// buffer, times V. Not in place: a row of keys not a multiple of 16 ends
// in a masked store that the next row's first load overlaps, and waits
// on (rows of 197, vit_b_16 at batch 4, one thread: its attention steps
// 80.9 -> 76.6 ms; two threads 41.1 -> 39.7; fastest of 40 runs a step,
// alternating binaries, two pairs; rows of 128 and 16 the same).
func (r *attentionRun) task(t int) {
	ap, q, kt, v, y := r.ap, r.q, r.kt, r.v, r.y
	m, n, d, dv, block := ap.m, ap.n, ap.d, ap.dv, ap.block
	buf := getFloats(2 * block * n)
	defer putFloats(buf)
	b, i0 := t/ap.blocks, (t%ap.blocks)*block
	rows := min(block, m-i0)
	s, ps := (*buf)[:rows*n], (*buf)[block*n:][:rows*n]
	gemm.SgemmWorkers(1, q.trans, kt.trans, rows, n, d, 1, q.at(b, i0), q.ld, kt.at(b, 0), kt.ld, 0, s, n)
	r.k.finishRows(s, n, r.c, r.mask, ap.maskBase, b, i0, ap.rowStride, ap.colStride)
	softmaxRows(s, ps, n, false)
	s = ps
	yb := y.at(b, i0)
	if n == 0 {
		for i := range rows {
			clear(yb[i*y.ld : i*y.ld+dv])
		}
		return
	}
	gemm.SgemmWorkers(1, false, v.trans, rows, dv, n, 1, s, n, v.at(b, 0), v.ld, 0, yb, y.ld)
}

// finishRows scales and masks the scores s, rows of n from query row i0
// of batch b on, each value as the operators it replaces compute it: the
// scale over the block at once, then the mask row by row.
func (k *fusedAttention) finishRows(s []float32, n int, c float32, mask []float32, maskBase []int, b, i0, rowStride, colStride int) {
	if k.scale != nil {
		switch {
		case k.scale.op == ewDiv:
			for j := scaleVecF32(s, c, true); j < len(s); j++ {
				s[j] /= c
			}
		default: // Mul, either order (the products are the same)
			for j := scaleVecF32(s, c, false); j < len(s); j++ {
				s[j] *= c
			}
		}
	}
	if mask == nil || n == 0 {
		return
	}
	for i := range len(s) / n {
		row := s[i*n : (i+1)*n]
		off := maskBase[b] + (i0+i)*rowStride
		if colStride == 1 {
			arith(ewAdd, row, 1, mask[off:off+n], 1, row, false)
			continue
		}
		for j := range row {
			row[j] += mask[off+j*colStride]
		}
	}
}

// batchBases returns the offset, at the strides st (one per batch axis),
// of each of the batch's index tuples in row-major order.
func batchBases(batch, st []int) []int {
	out := make([]int, numel(batch))
	idx := make([]int, len(batch))
	for t := range out {
		o := 0
		for a, i := range idx {
			o += i * st[a]
		}
		out[t] = o
		for a := len(idx) - 1; a >= 0; a-- {
			if idx[a]++; idx[a] < batch[a] {
				break
			}
			idx[a] = 0
		}
	}
	return out
}
