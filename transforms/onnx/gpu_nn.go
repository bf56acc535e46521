package onnx

import (
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// The launches of the operators that compute more than one element from
// each output's inputs: reductions, softmax, normalisations, pooling,
// convolution and the matrix products (cuBLAS).

func (k *reduceKernel) Launch(d *Device, in, out []DevArray) error {
	x, y := in[0], out[0]
	if !allFloat32(x) {
		return ErrOnHost
	}
	axes, err := k.axesOf(devMetas(in))
	if err != nil {
		return err
	}
	red, err := k.reduced(axes, len(x.Shape))
	if err != nil {
		return err
	}
	// The reduced axes of more than one element, and the others.
	lo, hi, contiguous := -1, -1, true
	for a, r := range red {
		if !r || x.Shape[a] == 1 {
			continue
		}
		if hi >= 0 && hi != a-1 {
			for b := hi + 1; b < a; b++ {
				if x.Shape[b] != 1 {
					contiguous = false
				}
			}
		}
		if lo < 0 {
			lo = a
		}
		hi = a
	}
	if lo < 0 && !anyReduced(red) {
		return d.Call.CopyDevice(y.Ptr, x.Ptr, y.Bytes())
	}
	src := x.Ptr
	var outer, n, inner int
	switch {
	case lo < 0: // only axes of size 1: one element each
		outer, n, inner = x.Len(), 1, 1
	case contiguous:
		outer, n, inner = numel(x.Shape[:lo]), numel(x.Shape[lo:hi+1]), numel(x.Shape[hi+1:])
	default: // move the reduced axes last
		var shape, st []int
		xst := Strides(x.Shape)
		for pass := range 2 {
			for a, r := range red {
				if r == (pass == 1) {
					shape, st = append(shape, x.Shape[a]), append(st, xst[a])
				}
			}
		}
		if src, err = d.scratch(x.Bytes()); err != nil {
			return err
		}
		if err := d.copyStrided(src, x.Ptr, 4, strided{shape: shape, dstSt: Strides(shape), srcSt: st}); err != nil {
			return err
		}
		n = 1
		for a, r := range red {
			if r {
				n *= x.Shape[a]
			}
		}
		outer, inner = x.Len()/max(n, 1), 1
	}
	if n == 0 && k.op != redSum && k.op != redMean && k.op != redSumSquare && k.op != redL1 && k.op != redL2 {
		return ErrOnHost // the empty reductions' identities are the CPU's
	}
	return d.launch(kReduce, outer*inner, int64(k.op), src, y.Ptr, i64(outer), i64(n), i64(inner))
}

func anyReduced(red []bool) bool {
	for _, r := range red {
		if r {
			return true
		}
	}
	return false
}

func (globalAvgPool) Launch(d *Device, in, out []DevArray) error {
	x := in[0]
	if !allFloat32(x) {
		return ErrOnHost
	}
	planes := x.Shape[0] * x.Shape[1]
	return d.launch(kReduce, planes, int64(redMean), x.Ptr, out[0].Ptr, i64(planes), i64(numel(x.Shape[2:])), int64(1))
}

func (k *softmaxKernel) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	outer, n, inner, err := k.split(in[0].Shape)
	if err != nil {
		return err
	}
	return d.launch(kSoftmax, outer*inner, in[0].Ptr, out[0].Ptr, i64(outer), i64(n), i64(inner), int64(boolInt(k.log)))
}

func (k *layerNorm) Launch(d *Device, in, out []DevArray) error {
	x, scale, b := in[0], in[1], arrayOf(in, 2)
	if !allFloat32(x, scale, b) {
		return ErrOnHost
	}
	_, rows, size, err := k.shape(x.Shape, scale.Shape, b.Shape, b.Defined())
	if err != nil {
		return err
	}
	// The kernel takes Scale and B of the normalised shape itself.
	if scale.Len() != size || b.Defined() && b.Len() != size {
		return ErrOnHost
	}
	return d.launch(kLayerNorm, rows, x.Ptr, scale.Ptr, ptrOr0(b), out[0].Ptr, ptrOr0(arrayOf(out, 1)), ptrOr0(arrayOf(out, 2)),
		i64(rows), i64(size), k.epsilon)
}

func (k *batchNorm) Launch(d *Device, in, out []DevArray) error {
	if k.training || !allFloat32(in...) {
		return ErrOnHost
	}
	x := in[0]
	c, per, inner, err := k.shape(x.Shape, in[1].Shape, in[2].Shape, in[3].Shape, in[4].Shape)
	if err != nil {
		return err
	}
	if per != 1 {
		return ErrOnHost
	}
	return d.launch(kBatchNorm, x.Len(), x.Ptr, in[1].Ptr, in[2].Ptr, in[3].Ptr, in[4].Ptr, out[0].Ptr,
		i64(x.Shape[0]), i64(c), i64(inner), k.epsilon)
}

// geo3 appends a geometry's spatial lists, 3 values each: in, k, out,
// stride, padLo, dil.
func geo3(args []any, g geometry) []any {
	for _, l := range [][3]int{g.in, g.k, g.out, g.stride, g.padLo, g.dil} {
		args = append(args, i64(l[0]), i64(l[1]), i64(l[2]))
	}
	return args
}

func (p *pool) Launch(d *Device, in, out []DevArray) error {
	x := in[0]
	if !allFloat32(x) || arrayOf(out, 1).Defined() { // MaxPool's Indices: the CPU's
		return ErrOnHost
	}
	g, err := p.geometry(x.Shape)
	if err != nil {
		return err
	}
	mode := int64(0)
	if !p.max {
		mode = 1
		if p.inclPad {
			mode = 2
		}
	}
	planes := x.Shape[0] * x.Shape[1]
	args := geo3([]any{mode, x.Ptr, out[0].Ptr, i64(planes)}, g)
	args = append(args, i64(g.padHi[0]), i64(g.padHi[1]), i64(g.padHi[2]))
	return d.launch(kPool, planes*g.outSize(), args...)
}

// convScratchBytes bounds the columns of one im2col pass: images go in
// chunks whose columns fit.
const convScratchBytes = 64 << 20

func (c *conv) Launch(d *Device, in, out []DevArray) error {
	x, w, b, y := in[0], in[1], arrayOf(in, 2), out[0]
	if !allFloat32(x, w, b) {
		return ErrOnHost
	}
	geo, err := c.shapes(x.Shape, w.Shape, b.Shape, b.Defined())
	if err != nil {
		return err
	}
	n, ch, m, group := x.Shape[0], x.Shape[1], w.Shape[0], c.group
	os, is := geo.outSize(), geo.inSize()
	if ch == 0 || y.Len() == 0 {
		return ErrOnHost // the bias alone, or nothing
	}
	if ch/group == 1 && group > 1 && group == ch {
		args := geo3([]any{x.Ptr, w.Ptr, ptrOr0(b), y.Ptr, i64(n), i64(ch), i64(m / ch)}, geo)
		return d.launch(kConvDepth, y.Len(), args...)
	}
	cg, mg := ch/group, m/group
	kg := cg * geo.kSize()
	pointwise := geo.kSize() == 1 && geo.stride == [3]int{1, 1, 1} && geo.padLo == [3]int{} && geo.padHi == [3]int{}
	for g := range group {
		wg := at(w.Ptr, g*mg*kg, 4)
		if pointwise { // W_g times each image's channels of the group, as they lie
			err := d.Call.GemmStridedBatched(false, false, mg, os, kg, wg, kg, 0,
				at(x.Ptr, g*cg*is, 4), os, int64(ch*is), at(y.Ptr, g*mg*os, 4), os, int64(m*os), n)
			if err != nil {
				return err
			}
		}
	}
	if !pointwise {
		chunk := max(1, min(n, convScratchBytes/(4*max(1, kg*os))))
		cols, err := d.scratch(int64(4 * chunk * kg * os))
		if err != nil {
			return err
		}
		for i0 := 0; i0 < n; i0 += chunk {
			nb := min(chunk, n-i0)
			for g := range group {
				args := geo3([]any{at(x.Ptr, i0*ch*is+g*cg*is, 4), cols, i64(nb), i64(ch * is), i64(kg * os), i64(cg)}, geo)
				if err := d.launch(kIm2col, nb*kg*os, args...); err != nil {
					return err
				}
				err := d.Call.GemmStridedBatched(false, false, mg, os, kg, at(w.Ptr, g*mg*kg, 4), kg, 0,
					cols, os, int64(kg*os), at(y.Ptr, (i0*m+g*mg)*os, 4), os, int64(m*os), nb)
				if err != nil {
					return err
				}
			}
		}
	}
	if b.Defined() {
		return d.launch(kBiasChannels, y.Len(), y.Ptr, b.Ptr, i64(n), i64(m), i64(os))
	}
	return nil
}

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
