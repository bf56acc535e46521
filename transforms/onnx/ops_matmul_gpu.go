package onnx

import "github.com/beamgpu/beamgpu/runtime/executor/gpu"

// The launches of MatMul and Gemm (ops_matmul.go): cuBLAS products, and
// gemm_epilogue_f32 (ops_matmul.cu) for Gemm's alpha, beta and C (Mean's
// division uses it too, ops_elementwise_gpu.go).

var kGemmEpilogue = Module.Kernel("gemm_epilogue_f32")

func (k *matMul) Launch(d *Device, in, out []DevArray) error {
	a, b, y := in[0], in[1], out[0]
	if !allFloat32(a, b) {
		return ErrOnHost
	}
	s, err := matMulShape(a.Shape, b.Shape)
	if err != nil {
		return err
	}
	nb := numel(s.batch)
	if y.Len() == 0 {
		return nil
	}
	if s.k == 0 {
		return d.fill(y.Ptr, y.Len(), make([]byte, 4))
	}
	c := d.Call
	ao, bo := s.batchOffsets()
	if numel(s.bBatch) == 1 && numel(s.aBatch) == nb { // B shared, A's rows one after another
		return c.Gemm(false, false, nb*s.m, s.n, s.k, a.Ptr, s.k, b.Ptr, s.n, y.Ptr, s.n)
	}
	if sa, ok := evenStride(ao); ok {
		if sb, ok := evenStride(bo); ok {
			return c.GemmStridedBatched(false, false, s.m, s.n, s.k, a.Ptr, s.k, int64(sa), b.Ptr, s.n, int64(sb),
				y.Ptr, s.n, int64(s.m*s.n), nb)
		}
	}
	for i := range nb {
		if err := c.Gemm(false, false, s.m, s.n, s.k, at(a.Ptr, ao[i], 4), s.k, at(b.Ptr, bo[i], 4), s.n,
			at(y.Ptr, i*s.m*s.n, 4), s.n); err != nil {
			return err
		}
	}
	return nil
}

// evenStride reports whether offsets step by one stride (0 for a repeated
// operand).
func evenStride(off []int) (int, bool) {
	if len(off) < 2 {
		return 0, true
	}
	st := off[1] - off[0]
	for i := range off {
		if off[i] != i*st+off[0] || off[0] != 0 {
			return 0, false
		}
	}
	return st, st >= 0
}

func (g *gemmOp) Launch(d *Device, in, out []DevArray) error {
	a, b, c, y := in[0], in[1], arrayOf(in, 2), out[0]
	if !allFloat32(a, b, c) {
		return ErrOnHost
	}
	m, k, n, err := g.shape(a.Shape, b.Shape, c.Shape, c.Defined())
	if err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 {
		if err := d.fill(y.Ptr, m*n, make([]byte, 4)); err != nil {
			return err
		}
	} else {
		lda, ldb := k, n
		if g.transA {
			lda = m
		}
		if g.transB {
			ldb = k
		}
		if err := d.Call.Gemm(g.transA, g.transB, m, n, k, a.Ptr, lda, b.Ptr, ldb, y.Ptr, n); err != nil {
			return err
		}
	}
	useC := c.Defined() && g.beta != 0
	if g.alpha == 1 && !useC {
		return nil
	}
	var cp gpu.Ptr
	scm, scn := 0, 0
	if useC {
		cp = c.Ptr
		st := BroadcastStrides(c.Shape, []int{m, n})
		scm, scn = st[0], st[1]
	}
	return d.launch(kGemmEpilogue, m*n, y.Ptr, cp, i64(m), i64(n), float64(g.alpha), float64(g.beta), i64(scm), i64(scn))
}
