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
// mask each optional), planned as one step (plan_fuse.go), as ONNX
// Runtime's Attention fusion
// (https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html).
// On the CPU each task takes a block of query rows of one head: its scores
// (rows x keys) in a buffer of the task's own, scaled, masked, their
// softmaxes, and their product with V, written to the output while the
// scores are in cache; the batch x heads x queries x keys score tensor is
// never made (at 32 x 12 x 512 x 512 it would be 400 MB, four times over
// unfused). Each operation is the operator's own (the products' rows are
// the unfused products' rows, the softmax is Softmax's), so the outputs
// are the unfused plan's bit for bit. On the device the same operators'
// launches run over a score buffer of a bounded number of batches at a time
// (ops_attention_fused_gpu.go).

// fusedAttention is the kernel of a fused attention step: inputs Q, Kᵀ,
// the scale (a float32 scalar; left out without one), the mask (left out
// without one) and V; one output.
type fusedAttention struct {
	qk, pv *matMul
	// scale is Div or Mul by the scalar, scaleFirst when the scalar is
	// the first operand (Mul(c, x)); nil: none.
	scale      *ewBinary
	scaleFirst bool
	// mask is the Add of the mask, maskFirst when it is the first operand.
	mask      *ewBinary
	maskFirst bool
	softmax   *softmaxKernel
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

func (k *fusedAttention) Infer(in []Meta) ([]Meta, error) {
	_, pv, err := attentionShapes(in[0].Shape, in[1].Shape, in[4].Shape)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: nd.Float32, Shape: pv.out}}, nil
}

// attentionRowBytes is the scores a task holds: a block of query rows
// whose scores stay in a core's L2 cache from the product to the softmax
// and the product with V.
const attentionRowBytes = 64 << 10

func (k *fusedAttention) Run(in, out []nd.Array) error {
	qk, pv, err := attentionShapes(in[0].Shape, in[1].Shape, in[4].Shape)
	if err != nil {
		return err
	}
	q, kt, v, y := nd.MustAs[float32](in[0]), nd.MustAs[float32](in[1]), nd.MustAs[float32](in[4]), nd.MustAs[float32](out[0])
	var c float32
	if k.scale != nil {
		c = nd.MustAs[float32](in[2])[0]
	}
	var mask []float32
	var maskBase []int
	var rowStride, colStride int
	if k.mask != nil {
		mask = nd.MustAs[float32](in[3])
		st := BroadcastStrides(in[3].Shape, qk.out)
		r := len(qk.out)
		rowStride, colStride = st[r-2], st[r-1]
		maskBase = batchBases(qk.batch, st[:r-2])
	}
	m, n, d, dv := qk.m, qk.n, qk.k, pv.n
	nb := numel(qk.batch)
	if m == 0 || dv == 0 || nb == 0 {
		return nil
	}
	qo, ko := qk.batchOffsets()
	_, vo := pv.batchOffsets()
	block := min(m, max(8, attentionRowBytes/(4*max(n, 1))))
	blocks := (m + block - 1) / block
	tasks := nb * blocks
	workers := parallel.Workers(tasks, block*n*(d+dv))
	parallel.DoWith(workers, tasks, func() func(int) {
		scores := make([]float32, block*n)
		return func(t int) {
			b, i0 := t/blocks, (t%blocks)*block
			rows := min(block, m-i0)
			s := scores[:rows*n]
			gemm.SgemmWorkers(1, false, false, rows, n, d, 1, q[qo[b]+i0*d:], d, kt[ko[b]:], n, 0, s, n)
			for r := range rows {
				row := s[r*n : (r+1)*n]
				k.finishRow(row, c, mask, maskBase, b, i0+r, rowStride, colStride)
				softmaxRow(row, row, false)
			}
			yb := y[b*m*dv+i0*dv:]
			if n == 0 {
				clear(yb[:rows*dv])
				return
			}
			gemm.SgemmWorkers(1, false, false, rows, dv, n, 1, s, n, v[vo[b]:], dv, 0, yb, dv)
		}
	})
	return nil
}

// finishRow scales and masks one row of scores (query row i of batch b),
// each as the operator it replaces computes it.
func (k *fusedAttention) finishRow(row []float32, c float32, mask []float32, maskBase []int, b, i, rowStride, colStride int) {
	if k.scale != nil {
		switch {
		case k.scale.op == ewDiv:
			for j, x := range row {
				row[j] = x / c
			}
		default: // Mul, either order (the products are the same)
			for j, x := range row {
				row[j] = x * c
			}
		}
	}
	if mask != nil {
		off := maskBase[b] + i*rowStride
		if colStride == 1 {
			for j, mv := range mask[off : off+len(row)] {
				row[j] += mv
			}
			return
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
