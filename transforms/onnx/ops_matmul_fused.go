package onnx

import (
	"runtime"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// A fused MatMul: a float32 MatMul whose output only an Add of a bias (a
// constant vector along the last axis, as every Linear layer's export
// writes it), then an Add of a residual and/or an activation read, planned
// as one step (plan_fuse.go), as ONNX Runtime's MatMul+Add and
// bias+activation fusions
// (https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html).
// Where B is one matrix for every row (a layer's weights), the rows go in
// blocks: each block's product, then its bias, residual and activation
// while the block is in cache. Each step computes what the operator it
// replaces computes, in the same order, so that the outputs are the
// unfused plan's bit for bit. On the device the products are MatMul's and
// the rest is conv_epilogue_f32 (ops_conv.cu), one kernel.

// fusedMatMul is the kernel of a fused MatMul: inputs A, B, the bias (or
// left out), the residual Z (left out without one), and a
// LayerNormalization's Scale and B (left out without one), one output.
type fusedMatMul struct {
	mm *matMul
	ep *epilogue
	// ln is a LayerNormalization over each row after the epilogue (the
	// Add + LayerNorm of a transformer's residual connections, as ONNX
	// Runtime's SkipLayerNormalization); its Scale and B are the step's
	// fifth and sixth inputs (B left out without one). nil: none.
	ln *layerNorm
}

func (k *fusedMatMul) Infer(in []Meta) ([]Meta, error) { return k.mm.Infer(in[:2]) }

// fusedRowBytes is the output a block of rows of a fused MatMul aims at:
// small enough to stay in a core's L2 cache from its product to its
// epilogue. But a block is at least fusedMinRows rows where the cores all
// have blocks: each block's product reads all of B, so that wide outputs
// in blocks of a few rows were bound by reading B (ViT-B/16's 768 -> 3072
// MLP layer, 10 rows a block: 78 GFLOP/s). Measured at one thread,
// AVX-512, alternate runs of one process, whole runs: 10 rows a block ->
// 64 -> 160 -> 320 rows: ViT-B/16 (batch 4) 1492 -> 1317 ms, then -6%,
// then -3.5%; the BERT-style encoder (8 x 128) 269 -> 246 ms, -4%, -2%;
// no block limit at all gained nothing more than 320.
const (
	fusedRowBytes = 128 << 10
	fusedMinRows  = 320
)

func (k *fusedMatMul) Run(in, out []nd.Array) error {
	a, b, y := in[0], in[1], out[0]
	mp, err := k.mm.plan(a.Shape, b.Shape)
	if err != nil {
		return err
	}
	s := mp.s
	var bias, z []float32
	if len(in) > 2 && in[2].Type != nd.Undefined {
		bias = nd.MustAs[float32](in[2])
	}
	if k.ep.residual {
		z = nd.MustAs[float32](in[3])
	}
	var lnScale, lnBias []float32
	if k.ln != nil {
		lnScale = nd.MustAs[float32](in[4])
		if len(in) > 5 && in[5].Type != nd.Undefined {
			lnBias = nd.MustAs[float32](in[5])
		}
	}
	ys := nd.MustAs[float32](y)
	rows, n := numel(s.batch)*s.m, s.n
	if numel(s.bBatch) != 1 || s.k == 0 || !k.mm.b.constant.Load() {
		// Products of their own (batches of B, or a B made in the run),
		// then the epilogue over the output.
		k.mm.runF32(mp, a, b, y)
		parallel.ForWith(rows, 4*n, finishRun{ep: k.ep, ln: k.ln, y: ys, bias: bias, z: z, lnScale: lnScale, lnBias: lnBias, n: n}, (*finishRun).rows)
		return nil
	}
	if rows == 0 || n == 0 {
		return nil
	}
	r := finishRun{ep: k.ep, ln: k.ln, y: ys, bias: bias, z: z, lnScale: lnScale, lnBias: lnBias, n: n,
		a: nd.MustAs[float32](a), pk: k.mm.b.get(b, false, s.k, n), k: s.k, total: rows}
	procs := runtime.GOMAXPROCS(0)
	block := max(1, fusedRowBytes/(4*n))
	w := 2 * procs // tasks enough for the cores first
	block = max(block, min(fusedMinRows, (rows+w-1)/w))
	// The blocks in whole tiles of the kernel's rows, as even as they go,
	// and as many as make each core's share the same: 788 rows (vit_b_16
	// at batch 4) in 4 blocks of 197 were 4 x 15 tiles of 14 rows, the
	// last of each one row (14 tiles and a row of work), where 57 tiles
	// make 14, 14, 14 and 15; 2048 rows (bert at batch 32 x 64) in 7 even
	// blocks leave one of two cores 4 of them, in 8 each core 4.
	r.mr = gemm.PanelHeight()
	r.units = (rows + r.mr - 1) / r.mr
	r.tasks = (rows + block - 1) / block
	if procs > 1 {
		r.tasks = (r.tasks + procs - 1) / procs * procs
	}
	r.tasks = min(r.units, r.tasks)
	parallel.EachWith(r.tasks, (r.units+r.tasks-1)/r.tasks*r.mr*n*s.k, r, (*finishRun).productRows)
	return nil
}

// finishRun is a fused product's epilogue (finishRows's arguments), and
// for productRows the product's: A (total rows of k), B packed, in blocks
// of rows.
type finishRun struct {
	ep                          *epilogue
	ln                          *layerNorm
	y, bias, z, lnScale, lnBias []float32
	n                           int
	a                           []float32
	pk                          *gemm.Packed
	k, total                    int
	mr, units, tasks            int // tasks of units tiles of mr rows between them
}

// rows finishes rows lo..hi.
func (r *finishRun) rows(lo, hi int) {
	finishRows(r.ep, r.ln, r.y, r.bias, r.z, r.lnScale, r.lnBias, lo, hi, r.n)
}

// productRows computes block t of rows, then finishes it while it is in
// cache.
func (r *finishRun) productRows(t int) {
	lo, hi := t*r.units/r.tasks*r.mr, min(r.total, (t+1)*r.units/r.tasks*r.mr)
	gemm.SgemmPacked(1, false, hi-lo, 1, r.a[lo*r.k:], r.k, r.pk, 0, r.n, 0, r.y[lo*r.n:], r.n)
	r.rows(lo, hi)
}

// finishRows computes the epilogue of rows [lo, hi) of y (rows of n), a
// fused MatMul's or Gemm's: the bias added (bias + y, as Add(bias, y)
// computes it; nil: none), then the residual and the activation (ep),
// then the LayerNormalization (ln; nil: none).
func finishRows(ep *epilogue, ln *layerNorm, y, bias, z, lnScale, lnBias []float32, lo, hi, n int) {
	for r := lo; r < hi; r++ {
		row := y[r*n : (r+1)*n]
		if bias != nil {
			for j := addVec(row, bias[:n]); j < n; j++ {
				row[j] += bias[j]
			}
		}
		var zr []float32
		if z != nil {
			zr = z[r*n : (r+1)*n]
		}
		ep.apply(row, zr)
	}
	if ln != nil {
		layerNormRowsF32(y[lo*n:hi*n], y[lo*n:hi*n], lnScale, lnBias, n, ln.epsilon)
	}
}

// fusedGemm is the kernel of a fused Gemm (a Linear layer as older
// exporters write it, its bias C within): inputs A, B, C (or left out),
// the residual Z (or left out), and a LayerNormalization's Scale and B (or
// left out); one output. The product is Gemm's own, then each block of
// rows its epilogue.
type fusedGemm struct {
	g  *gemmOp
	ep *epilogue
	ln *layerNorm
}

func (k *fusedGemm) Infer(in []Meta) ([]Meta, error) { return k.g.Infer(in[:3]) }

func (k *fusedGemm) Run(in, out []nd.Array) error {
	if err := k.g.Run(in[:3], out); err != nil {
		return err
	}
	var z, lnScale, lnBias []float32
	if k.ep.residual {
		z = nd.MustAs[float32](in[3])
	}
	if k.ln != nil {
		lnScale = nd.MustAs[float32](in[4])
		if len(in) > 5 && in[5].Type != nd.Undefined {
			lnBias = nd.MustAs[float32](in[5])
		}
	}
	y := out[0]
	if y.Len() == 0 {
		return nil
	}
	n := y.Shape[1]
	ys := nd.MustAs[float32](y)
	parallel.ForWith(y.Shape[0], 4*n, finishRun{ep: k.ep, ln: k.ln, y: ys, z: z, lnScale: lnScale, lnBias: lnBias, n: n}, (*finishRun).rows)
	return nil
}
