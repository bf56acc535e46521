package onnx

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// ConvInteger and QLinearConv (opset 10): Conv (ops_conv.go's attributes
// and geometry: groups, strides, dilations, pads, auto_pad) of int8 or
// uint8 X and W less their zero points, summed in int32; QLinearConv adds
// its int32 bias B to the sums and requantizes them to its output's type
// with the multiplier x_scale x w_scale[m] / y_scale of each output
// channel m (requantize, as QLinearMatMul). The padding is X's zero point:
// it adds nothing to the sums, as in ONNX Runtime.
//
// X's zero point (and QLinearConv's x_scale, y_scale and y_zero_point) are
// per tensor; W's are per tensor or one per output channel. Where the CPU
// has AVX2 and a group has at least 4 output channels, the sums are
// computed on the integer kernels (ubgemm where W fits it, else igemm)
// from the padded input's phase planes (convGrid: no im2col). Otherwise
// they are computed exactly on float32 kernels (ops_quant_gemm.go), from X
// and W less their zero points as float32s (W's made once when it is a
// constant): where every output channel's weights sum to at most 2^24 /
// 255 in magnitude (real weights: every partial sum is then an integer
// under 2^24, exact in any order), by the float Conv itself, whichever of
// its kernels the shape takes (direct, depthwise, packed products); else
// as patches^T x W_g^T per image, group and chunk of output positions in
// runs of K that stay exact (intGemm, packInt), added in int32.

func init() {
	RegisterOp(OpDef{Name: "ConvInteger", Versions: []int{10}, New: newConvInteger})
	RegisterOp(OpDef{Name: "QLinearConv", Versions: []int{10}, New: newQLinearConv})
}

// qconv is ConvInteger (linear false) and QLinearConv.
type qconv struct {
	c      *conv // the window and groups, and their shape checks
	linear bool
	w      shiftedCache
}

func newConvInteger(n *Node) (Kernel, error) { return newQConv(n, false, 2, 4) }

func newQLinearConv(n *Node) (Kernel, error) { return newQConv(n, true, 8, 9) }

func newQConv(n *Node, linear bool, minIn, maxIn int) (Kernel, error) {
	if err := n.CheckArity(minIn, maxIn, 1, 1); err != nil {
		return nil, err
	}
	c, err := newConv(&Node{Name: n.Name, Op: n.Op, Opset: n.Opset, Since: n.Since, Inputs: n.Inputs[:2], Outputs: n.Outputs, Attrs: n.Attrs})
	if err != nil {
		return nil, err
	}
	return &qconv{c: c.(*conv), linear: linear}, nil
}

// The inputs' indices.
func (k *qconv) inputs() (x, w, xz, wz, b int) {
	if k.linear {
		return 0, 3, 2, 5, 8
	}
	return 0, 1, 2, 3, -1
}

// params are QLinearConv's three quantizations, w's per output channel
// (m of them).
func (k *qconv) params(m int) []qInput {
	return []qInput{{"x_scale", "x_zero_point", 1, 2, 0, -1}, {"w_scale", "w_zero_point", 4, 5, 3, m}, {"y_scale", "y_zero_point", 6, 7, 7, -1}}
}

func (k *qconv) geometry(in []Meta) (geometry, nd.DType, error) {
	ix, iw, ixz, iwz, ib := k.inputs()
	x, w := in[ix], in[iw]
	var b Meta
	if ib >= 0 {
		b = metaAt(in, ib)
	}
	if !isQuantType(x.Type) || !isQuantType(w.Type) {
		return geometry{}, 0, fmt.Errorf("inputs x and w are %v and %v: want int8 or uint8", x.Type, w.Type)
	}
	if b.Type != nd.Undefined && b.Type != nd.Int32 {
		return geometry{}, 0, fmt.Errorf("input B is %v: want int32 (the bias quantized with scale x_scale x w_scale)", b.Type)
	}
	geo, err := k.c.shapes(x.Shape, w.Shape, b.Shape, b.Type != nd.Undefined)
	if err != nil {
		return geo, 0, err
	}
	m := w.Shape[0]
	if !k.linear {
		if err := checkQShape("x_scale", "x_zero_point", Meta{}, metaAt(in, ixz), -1, x.Type); err != nil {
			return geo, 0, err
		}
		return geo, nd.Int32, checkQShape("w_scale", "w_zero_point", Meta{}, metaAt(in, iwz), m, w.Type)
	}
	if yt := metaAt(in, 7).Type; !isQuantType(yt) {
		return geo, 0, fmt.Errorf("input y_zero_point is %v: want int8 or uint8 (the output's type)", yt)
	}
	for _, c := range k.params(m) {
		if err := checkQShape(c.s, c.z, in[c.is], in[c.iz], c.n, in[c.on].Type); err != nil {
			return geo, 0, err
		}
	}
	return geo, in[7].Type, nil
}

func (k *qconv) Infer(in []Meta) ([]Meta, error) {
	geo, t, err := k.geometry(in)
	if err != nil {
		return nil, err
	}
	if err := k.checkConsts(in); err != nil {
		return nil, err
	}
	_, iw, _, iwz, _ := k.inputs()
	if in[iw].Value != nil && (metaAt(in, iwz).Type == nd.Undefined || metaAt(in, iwz).Value != nil) {
		k.w.constant.Store(true)
	}
	return []Meta{{Type: t, Shape: geo.outShape(in[0].Shape[0], in[iw].Shape[0])}}, nil
}

func (k *qconv) checkConsts(in []Meta) error {
	if !k.linear {
		return nil
	}
	for _, c := range k.params(-1) {
		if err := checkQValues(c.s, c.z, metaAt(in, c.is), metaAt(in, c.iz)); err != nil {
			return err
		}
	}
	return nil
}

func (k *qconv) Run(in, out []nd.Array) error {
	metas := make([]Meta, len(in))
	for i, a := range in {
		metas[i] = Meta{Type: a.Type, Shape: a.Shape}
	}
	geo, _, err := k.geometry(metas)
	if err != nil {
		return err
	}
	ix, iw, ixz, iwz, ib := k.inputs()
	x, w, y := in[ix], in[iw], out[0]
	p := convProblem{geo: geo, n: x.Shape[0], c: x.Shape[1], m: w.Shape[0], group: k.c.group}
	var mult []float32
	var yz int32
	var xz, wz []int32
	if k.linear {
		var q [3]qParams
		for i, c := range k.params(p.m) {
			if q[i], err = readQParams(c.s, c.z, in[c.is], in[c.iz]); err != nil {
				return err
			}
		}
		mult = make([]float32, p.m)
		for j := range mult {
			mult[j] = q[0].scale[0] * q[1].scaleAt(j) / q[2].scale[0]
		}
		yz, xz, wz = q[2].zero(0), q[0].zp, q[1].zp
	} else {
		xz, wz = zeroPoints(arrayAt(in, ixz)), zeroPoints(arrayAt(in, iwz))
	}
	cg, mg := p.c/p.group, p.m/p.group
	kk := cg * geo.kSize()
	var rq *requant
	if k.linear {
		rq = &requant{y: y, mult: mult, bias: asOr[int32](arrayAt(in, ib)), zp: yz}
	}
	// The integer kernels compute tiles of 4 or 6 output channels of a
	// group: groups of fewer (depthwise ones) take the float kernels.
	if igWidth > 0 && mg >= ubRows {
		wp := k.w.getPanels(w, func() *shiftedOperand {
			if op := packConvWUb(w, wz, p.m, kk, p.group); op != nil {
				return op
			}
			panels := make([][]int16, p.group)
			for g := range panels {
				zg := wz
				if len(wz) > 1 {
					zg = wz[g*mg : (g+1)*mg]
				}
				panels[g] = make([]int16, igASize(mg, kk))
				if w.Type == nd.Int8 {
					igPackA(panels[g], nd.MustAs[int8](w)[g*mg*kk:], kk, mg, kk, zg)
				} else {
					igPackA(panels[g], nd.MustAs[uint8](w)[g*mg*kk:], kk, mg, kk, zg)
				}
			}
			return &shiftedOperand{ig: panels}
		})
		var acc []int32
		if rq == nil {
			acc = nd.MustAs[int32](y)
		}
		switch {
		case wp.ub != nil:
			convUbGrid(p, x.Data, x.Type == nd.Int8, zpAt(xz, 0), wp.ub, wp.sums, acc, rq)
		case x.Type == nd.Int8:
			convIntGrid(p, nd.MustAs[int8](x), zpAt(xz, 0), wp.ig, acc, rq)
		default:
			convIntGrid(p, nd.MustAs[uint8](x), zpAt(xz, 0), wp.ig, acc, rq)
		}
		return nil
	}
	xf := getFloats(x.Len())
	defer putFloats(xf)
	shiftedInto(x, *xf, xz, 1, 1, x.Len())
	wf := k.w.get(w, func(dst []float32) { shiftedInto(w, dst, wz, 1, p.m, w.Len()/max(1, p.m)) }, func(v []float32) ([]*intPacked, bool) {
		if k.w.constant.Load() && rowsL1(v, p.m, kk)*255 <= 1<<24 {
			return nil, true // every sum exact in float32: the float Conv's kernels
		}
		// Per group, op(B) = W_g's transpose (K x m/group), packed.
		packed := make([]*intPacked, p.group)
		for g := range packed {
			packed[g] = packInt(true, kk, mg, v[g*mg*kk:], kk)
		}
		return packed, false
	})
	if wf.exact && k.w.constant.Load() {
		// Each output channel's weights sum to at most 2^24 / 255 in
		// magnitude (the whole of K, for real weights): every partial sum
		// of its products is an integer under 2^24, exact in float32 in
		// any order. The float Conv (its direct, depthwise or packed
		// kernels, the fastest for the shape) computes the sums. Only for
		// constant weights: the float Conv keeps its packings of W by
		// address, and weights made anew each run could reuse one.
		k.c.constW.Store(true) // its packing of wf.v is kept
		sums := getFloats(y.Len())
		defer putFloats(sums)
		ys := nd.Of(*sums, y.Shape...)
		if err := k.c.run([]nd.Array{nd.Of(*xf, x.Shape...), nd.Of(wf.v, w.Shape...)}, []nd.Array{ys}, nil, nil); err != nil {
			return err
		}
		P := geo.outSize()
		parallel.Each(p.n*p.m, 4*P, func(t int) {
			plane := (*sums)[t*P : (t+1)*P]
			if rq == nil {
				acc := nd.MustAs[int32](y)[t*P : (t+1)*P]
				for i, v := range plane {
					acc[i] = int32(v)
				}
				return
			}
			requantPlanes(rq, plane, P, 1, t*P, P, t%p.m)
		})
		return nil
	}
	if rq == nil {
		convIntProducts(p, *xf, wf, nd.MustAs[int32](y), nil)
		return nil
	}
	convIntProducts(p, *xf, wf, nil, rq)
	return nil
}

// rowsL1 is the largest sum of magnitudes of the rows of v (rows x k).
func rowsL1(v []float32, rows, k int) float32 {
	var most float32
	for r := range rows {
		var s float32
		for _, x := range v[r*k : r*k+k] {
			s += max(x, -x)
		}
		most = max(most, s)
	}
	return most
}

// convIntProducts computes the convolution of x (n x c x input
// positions) by w (m x c/group x kernel, packed per group), their values
// integers of magnitude at most 255 held as float32s, exactly: per image,
// group and chunk of output positions, patches^T x W_g^T (intGemm), as
// the float Conv's convGemm. The sums go into acc's planes (n x m x
// positions), or, with rq, are requantized into rq.y's in the task that
// made them, while in cache.
func convIntProducts(p convProblem, x []float32, w *shiftedOperand, acc []int32, rq *requant) {
	geo := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	k := cg * geo.kSize()
	P, inSize := geo.outSize(), geo.inSize()
	if P == 0 || mg == 0 || p.n == 0 {
		return
	}
	pointwise := p.pointwise()
	pc := convChunk(p, k)
	chunks := (P + pc - 1) / pc
	parallel.Each(p.n*p.group*chunks, 2*pc*k*mg, func(t int) {
		img, g, ch := t/(p.group*chunks), t/chunks%p.group, t%chunks
		p0 := ch * pc
		n := min(pc, P-p0)
		buf := getFloats(n*mg + pcIf(!pointwise, k*n))
		defer putFloats(buf)
		tmp := (*buf)[:n*mg]
		xg := x[(img*p.c+g*cg)*inSize:]
		a, lda := xg[p0:], P
		if !pointwise {
			a, lda = (*buf)[n*mg:n*mg+k*n], n
			im2col(a, xg, cg, geo, p0, n)
		}
		sums := getInts(n * mg)
		defer putInts(sums)
		// sums (n x mg) = patches^T (n x k) x W_g^T (k x mg)
		inTmp := intGemm(true, n, mg, k, a, lda, intB{packed: w.packed[g]}, *sums, mg, tmp, rq == nil)
		off := (img*p.m+g*mg)*P + p0
		switch {
		case rq == nil:
			transposeInts(acc[off:], P, *sums, n, mg)
		case inTmp:
			requantPlanes(rq, tmp, n, mg, off, P, g*mg)
		default:
			requantPlanes(rq, *sums, n, mg, off, P, g*mg)
		}
	})
}

// transposeInts writes the n x m matrix t (row-major) into the columns of
// dst: dst[j*ld+i] = t[i*m+j].
func transposeInts(dst []int32, ld int, t []int32, n, m int) {
	for j := range m {
		d := dst[j*ld : j*ld+n]
		for i := range d {
			d[i] = t[i*m+j]
		}
	}
}

// convGrid is the layout of a convolution on the integer kernels without
// im2col. X is padded and cut into phase planes, one per offset (r0, r1,
// r2) below the stride along each axis: phase plane r holds the padded
// input at (i0 s0 + r0, i1 s1 + r1, i2 s2 + r2) at (i0, i1, i2), over the
// extent ext = out + (k - 1) dil / s. Tap (c, kd, kh, kw) at output
// position (od, oh, ow) reads the padded input at (od s0 + kd dil0, ...):
// phase plane (kd dil0 mod s0, ...) of channel c at (od + kd dil0 / s0,
// ...), which is that plane's value at flat index q + the tap's offset
// (offs), q = (od x ext[1] + oh) x ext[2] + ow. So over a run of q every
// row of the patches is a run of a phase plane, packed as the kernels' B
// straight from it (with stride 1, one phase plane: the padded input
// itself). The q that fall past the output's columns (ow >= out[2]) or
// rows are computed and left out of the output.
type convGrid struct {
	ext       [3]int
	phases    int // phase planes a channel
	plane, hw int // a phase plane's values, and a depth slice's
	q         int // the q of the output: from 0 to the last position's
	offs      []int
	pc        int // positions (q) of a task
	chunks    int
}

func newConvGrid(p convProblem) *convGrid {
	geo := p.geo
	s := geo.stride
	g := &convGrid{phases: s[0] * s[1] * s[2]}
	for i := range g.ext {
		g.ext[i] = geo.out[i] + (geo.k[i]-1)*geo.dil[i]/s[i]
	}
	g.plane, g.hw = g.ext[0]*g.ext[1]*g.ext[2], g.ext[1]*g.ext[2]
	cg := p.c / p.group
	k := cg * geo.kSize()
	for c := range cg {
		for kd := range geo.k[0] {
			for kh := range geo.k[1] {
				for kw := range geo.k[2] {
					t0, t1, t2 := kd*geo.dil[0], kh*geo.dil[1], kw*geo.dil[2]
					phase := ((t0%s[0])*s[1]+t1%s[1])*s[2] + t2%s[2]
					g.offs = append(g.offs, (c*g.phases+phase)*g.plane+((t0/s[0])*g.ext[1]+t1/s[1])*g.ext[2]+t2/s[2])
				}
			}
		}
	}
	g.q = (geo.out[0]-1)*g.hw + (geo.out[1]-1)*g.ext[2] + geo.out[2]
	g.pc = convPositions(p, k, 64, 2*igCols)
	g.chunks = (g.q + g.pc - 1) / g.pc
	return g
}

// fill writes the plane x (geo.in's extent) of a channel, padded with pad,
// into dst (g.phases phase planes), each run of values along the last axis
// by row (dst's run from src's values at src[0], src[step], ...).
func fillPhases[T int16 | byte, X int8 | uint8](g *convGrid, geo geometry, dst []T, x []X, pad T, row func(d []T, src []X, step int)) {
	fill(dst, pad)
	s, e, in, lo := geo.stride, g.ext, geo.in, geo.padLo
	ph := 0
	for r0 := range s[0] {
		a0, b0 := phaseSpan(r0, s[0], lo[0], in[0], e[0])
		for r1 := range s[1] {
			a1, b1 := phaseSpan(r1, s[1], lo[1], in[1], e[1])
			for r2 := range s[2] {
				a2, b2 := phaseSpan(r2, s[2], lo[2], in[2], e[2])
				pl := dst[ph*g.plane : (ph+1)*g.plane]
				ph++
				if a2 == b2 {
					continue
				}
				for i0 := a0; i0 < b0; i0++ {
					x0 := i0*s[0] + r0 - lo[0]
					for i1 := a1; i1 < b1; i1++ {
						x1 := i1*s[1] + r1 - lo[1]
						at := (i0*e[1] + i1) * e[2]
						row(pl[at+a2:at+b2], x[(x0*in[1]+x1)*in[2]+a2*s[2]+r2-lo[2]:], s[2])
					}
				}
			}
		}
	}
}

// phaseSpan is the first and last+1 index i of a phase plane along an axis
// (stride s, phase r, padding lo before n inputs, extent e) whose input
// index i s + r - lo is in [0, n).
func phaseSpan(r, s, lo, n, e int) (int, int) {
	a, b := 0, 0
	if d := lo - r; d > 0 {
		a = (d + s - 1) / s
	}
	if d := n + lo - r; d > 0 {
		b = min(e, (d+s-1)/s)
	}
	return a, max(a, b)
}

// fillPhases2D is fillPhases of bytes for a convolution over two axes
// (stride, input and extent 1 along the first, no padding there), each
// value xor flip: the same planes, by loops of their own, not a call of
// row for every row of every phase (a row of 8 of the QDQ CNN's stride-2
// layer took longer to call than to fill). Measured on the QDQ CNN at
// batch 64, one thread, fastest of 40 runs a step, alternating binaries,
// three pairs: its stride-2 layer 0.390 -> 0.375 ms, the stride-1 one the
// same. Stride 2 along the columns takes each input row once, split into its
// even and odd bytes at once (deinterleave): that layer 0.386 -> 0.336 ms
// (fastest of 20 runs a step, alternating binaries, three pairs).
func fillPhases2D(g *convGrid, geo geometry, dst, x []byte, pad, flip byte) {
	fill(dst, pad)
	s1, s2 := geo.stride[1], geo.stride[2]
	e1, e2 := g.ext[1], g.ext[2]
	ih, iw := geo.in[1], geo.in[2]
	lo1, lo2 := geo.padLo[1], geo.padLo[2]
	if s2 == 2 { // each input row once, into both column phases
		// Input column 2j goes to phase (lo2 & 1) at j + lo2/2, column 2j+1
		// to the other at j + (lo2+1)/2, as far as the extent goes.
		rE, oE, oO := lo2&1, lo2/2, (lo2+1)/2
		nE, nO := max(0, min((iw+1)/2, e2-oE)), max(0, min(iw/2, e2-oO))
		for r1 := range s1 {
			a1, b1 := phaseSpan(r1, s1, lo1, ih, e1)
			pE, pO := dst[(r1*2+rE)*g.plane:][:g.plane], dst[(r1*2+1-rE)*g.plane:][:g.plane]
			for i1 := a1; i1 < b1; i1++ {
				deinterleave(pE[i1*e2+oE:][:nE], pO[i1*e2+oO:][:nO], x[(i1*s1+r1-lo1)*iw:][:iw], flip)
			}
		}
		return
	}
	ph := 0
	for r1 := range s1 {
		a1, b1 := phaseSpan(r1, s1, lo1, ih, e1)
		for r2 := range s2 {
			a2, b2 := phaseSpan(r2, s2, lo2, iw, e2)
			pl := dst[ph*g.plane : (ph+1)*g.plane]
			ph++
			if a2 == b2 {
				continue
			}
			c0 := a2*s2 + r2 - lo2 // the input column of the phase's column a2
			for i1 := a1; i1 < b1; i1++ {
				src := x[(i1*s1+r1-lo1)*iw:][:iw]
				d := pl[i1*e2+a2 : i1*e2+b2]
				switch {
				case s2 == 1 && flip == 0:
					copy(d, src[c0:])
				case s2 == 1:
					for i, v := range src[c0 : c0+len(d)] {
						d[i] = v ^ flip
					}
				default:
					_ = src[c0+(len(d)-1)*s2]
					for i := range d {
						d[i] = src[c0+i*s2] ^ flip
					}
				}
			}
		}
	}
}

// deinterleave writes src's even bytes (src[0], src[2], ...) into even
// and its odd ones into odd, as many as each holds, each xor flip: 16
// bytes at a time split in two 64-bit words (each word's even bytes
// gathered by three shifts and masks), the rest one at a time. A stride-2
// layer's phase planes take a row of each at once: the QDQ CNN's 8 -> 16
// layer's phase planes, gathered a byte at a time, were a fifth of the
// model's run at one thread (perf).
func deinterleave(even, odd, src []byte, flip byte) {
	f := uint64(flip) * 0x0101010101010101
	k := 0
	for ; 2*k+16 <= len(src) && k+8 <= len(even) && k+8 <= len(odd); k += 8 {
		w0 := binary.LittleEndian.Uint64(src[2*k:])
		w1 := binary.LittleEndian.Uint64(src[2*k+8:])
		binary.LittleEndian.PutUint64(even[k:], (evenBytes(w0)|evenBytes(w1)<<32)^f)
		binary.LittleEndian.PutUint64(odd[k:], (evenBytes(w0>>8)|evenBytes(w1>>8)<<32)^f)
	}
	for j := k; j < len(even); j++ {
		even[j] = src[2*j] ^ flip
	}
	for j := k; j < len(odd); j++ {
		odd[j] = src[2*j+1] ^ flip
	}
}

// evenBytes is w's bytes 0, 2, 4 and 6 in its low 4 bytes, in order.
func evenBytes(w uint64) uint64 {
	w &= 0x00FF00FF00FF00FF
	w = (w | w>>8) & 0x0000FFFF0000FFFF
	return (w | w>>16) & 0x00000000FFFFFFFF
}

// gridRun is a run of q in the output: at in the task's, the position and
// the count.
type gridRun struct{ at, pos, cnt int }

// runs appends to buf the runs of q0 .. q0+n in the output.
func (g *convGrid) runs(geo geometry, q0, n int, buf []gridRun) []gridRun {
	for q := q0; q < q0+n; {
		od, r := q/g.hw, q%g.hw
		oh, ow := r/g.ext[2], r%g.ext[2]
		switch {
		case oh >= geo.out[1]:
			q = (od + 1) * g.hw
		case ow >= geo.out[2]:
			q += g.ext[2] - ow
		default:
			cnt := min(geo.out[2]-ow, q0+n-q)
			buf = append(buf, gridRun{at: q - q0, pos: (od*geo.out[1]+oh)*geo.out[2] + ow, cnt: cnt})
			q += cnt
		}
	}
	return buf
}

// put writes a task's sums (mg rows of n, output channels ch0 on) into the
// output's planes from off: into acc plus corr[ch] (corr nil: 0), or
// requantized into rq.y with corr added to the bias.
func (g *convGrid) put(runs []gridRun, sums []int32, n, mg, ch0, off, P int, corr, acc []int32, rq *requant) {
	if rq == nil {
		for j := range mg {
			src, dst := sums[j*n:], acc[off+j*P:]
			var c int32
			if corr != nil {
				c = corr[ch0+j]
			}
			for _, r := range runs {
				d, s := dst[r.pos:r.pos+r.cnt], src[r.at:r.at+r.cnt]
				if c == 0 {
					copy(d, s)
					continue
				}
				for i, v := range s {
					d[i] = v + c
				}
			}
		}
		return
	}
	if rq.y.Type == nd.Int8 {
		requantRuns(nd.MustAs[int8](rq.y)[off:], rq, sums, n, mg, ch0, P, corr, func(dst, src []int8) {
			for _, r := range runs {
				copy(dst[r.pos:r.pos+r.cnt], src[r.at:])
			}
		})
	} else {
		requantRuns(nd.MustAs[uint8](rq.y)[off:], rq, sums, n, mg, ch0, P, corr, func(dst, src []uint8) {
			for _, r := range runs {
				copy(dst[r.pos:r.pos+r.cnt], src[r.at:])
			}
		})
	}
}

// convIntGrid computes the convolution of x (n x c x input positions) by
// w (per group, m/group x c/group x kernel less its zero points, packed as
// igemm's A) on igemm: per image, group and chunk of output positions (q:
// convGrid), W_g x patches (packed straight from the phase planes of X
// less its zero point, padded with 0) into the output's planes: acc's
// (int32 sums), or, with rq, requantized into rq.y's by the task that made
// them.
func convIntGrid[X int8 | uint8](p convProblem, x []X, xz int32, w [][]int16, acc []int32, rq *requant) {
	geo := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	k := cg * geo.kSize()
	P, inSize := geo.outSize(), geo.inSize()
	if P == 0 || mg == 0 || p.n == 0 {
		return
	}
	g := newConvGrid(p)
	cs := g.phases * g.plane // a channel's phase planes
	xp := planes16.get(p.n * p.c * cs)
	defer planes16.put(xp)
	row := func(d []int16, src []X, step int) {
		if step == 1 {
			for i, v := range src[:len(d)] {
				d[i] = int16(int32(v) - xz)
			}
			return
		}
		for i := range d {
			d[i] = int16(int32(src[i*step]) - xz)
		}
	}
	parallel.Each(p.n*p.c, 2*cs, func(t int) {
		fillPhases(g, geo, (*xp)[t*cs:(t+1)*cs], x[t*inSize:(t+1)*inSize], 0, row)
	})
	kp := igPairsOf(k)
	parallel.Each(p.n*p.group*g.chunks, 2*g.pc*k*mg, func(t int) {
		img, grp, ch := t/(p.group*g.chunks), t/g.chunks%p.group, t%g.chunks
		q0 := ch * g.pc
		n := min(g.pc, g.q-q0)
		pb := panels16.get(igBSize(k, n))
		defer panels16.put(pb)
		igPackBAt(*pb, (*xp)[(img*p.c+grp*cg)*cs+q0:], g.offs, k, n)
		sums := getInts(mg*n + sumsSlack)
		defer putInts(sums)
		igemm(w[grp], mg, *pb, n, kp, *sums, n)
		var buf [64]gridRun
		g.put(g.runs(geo, q0, n, buf[:0]), (*sums)[:mg*n+sumsSlack], n, mg, grp*mg, (img*p.m+grp*mg)*P, P, nil, acc, rq)
	})
}

// convUbGrid is convIntGrid on ubgemm: W's int8s (w: ubgemm's panels per
// group, wSums its rows' sums) by X's raw uint8s (int8 ones plus 128,
// flip) padded with its zero point xz, the sums then less xz times W's
// rows' sums.
func convUbGrid(p convProblem, x []byte, flip bool, xz int32, w [][]byte, wSums []int32, acc []int32, rq *requant) {
	geo := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	k := cg * geo.kSize()
	P, inSize := geo.outSize(), geo.inSize()
	if P == 0 || mg == 0 || p.n == 0 {
		return
	}
	if flip {
		xz += 128
	}
	corr := make([]int32, p.m)
	for ch, s := range wSums {
		corr[ch] = -xz * s
	}
	g := newConvGrid(p)
	cs := g.phases * g.plane // a channel's phase planes
	// The phase planes are X's own planes where the convolution adds no
	// padding, has stride 1 and X is uint8 (a 1x1 convolution's, most
	// often): no copy. Measured on the QDQ CNN at batch 64, one thread,
	// fastest of 40 runs, alternating binaries: its 1x1 and depthwise layers
	// (the steps of input 16x8x8) 0.39-0.41 -> 0.31 ms, the 1x1 one 0.17 ->
	// about 0.09; the sum of all its steps' fastest 1.04-1.09 -> 0.95-0.99 ms.
	xs := x
	if flip || g.plane != inSize || g.phases != 1 {
		xp := planes8.get(p.n * p.c * cs)
		defer planes8.put(xp)
		var f byte
		if flip {
			f = 0x80
		}
		row := func(d []byte, src []byte, step int) {
			if step == 1 {
				if f == 0 {
					copy(d, src)
					return
				}
				for i, v := range src[:len(d)] {
					d[i] = v ^ f
				}
				return
			}
			for i := range d {
				d[i] = src[i*step] ^ f
			}
		}
		planar := geo.stride[0] == 1 && geo.in[0] == 1 && geo.padLo[0] == 0 && g.ext[0] == 1 // two axes: fillPhases2D
		parallel.Each(p.n*p.c, cs, func(t int) {
			if planar {
				fillPhases2D(g, geo, (*xp)[t*cs:(t+1)*cs], x[t*inSize:(t+1)*inSize], byte(xz), f)
				return
			}
			fillPhases(g, geo, (*xp)[t*cs:(t+1)*cs], x[t*inSize:(t+1)*inSize], byte(xz), row)
		})
		xs = *xp
	}
	kq := ubQuadsOf(k)
	parallel.Each(p.n*p.group*g.chunks, 2*g.pc*k*mg, func(t int) {
		img, grp, ch := t/(p.group*g.chunks), t/g.chunks%p.group, t%g.chunks
		q0 := ch * g.pc
		n := min(g.pc, g.q-q0)
		pb := panels8.get(ubBSize(k, n))
		defer panels8.put(pb)
		ubPackBAt(*pb, xs[(img*p.c+grp*cg)*cs+q0:], g.offs, k, n)
		sums := getInts(mg*n + sumsSlack)
		defer putInts(sums)
		ubgemm(w[grp], mg, *pb, n, kq, *sums, n, nil, true)
		var buf [64]gridRun
		g.put(g.runs(geo, q0, n, buf[:0]), (*sums)[:mg*n+sumsSlack], n, mg, grp*mg, (img*p.m+grp*mg)*P, P, corr, acc, rq)
	})
}

// sumsSlack is the int32s a grid task's sums hold past their m rows of n:
// requantRuns's last row's last vector.
const sumsSlack = 32

// requantRuns requantizes the sums (m rows of n, output channels ch0 on,
// corr[ch] added to their biases: nil, none) a row at a time into a
// scratch row (pooled: a task's), which place copies into the row's plane
// of y (y[j*P:]).
//
// A row is requantized through the end of its last vector of 32 where the
// sums run on that far (the next row's, or sumsSlack past the last): the
// values past n are never placed, and the vector kernel leaves no row's
// last values to a loop of one at a time. Measured on the QDQ CNN at batch
// 64, one thread, fastest of 40 runs a step, alternating binaries, three
// pairs: its 3x3 layers 0.233 -> 0.213 ms (3 channels in) and 0.410 ->
// 0.397 (8 in); the model's steps 0.91 -> 0.88.
func requantRuns[Y int8 | uint8](y []Y, rq *requant, sums []int32, n, m, ch0, P int, corr []int32, place func(dst, src []Y)) {
	n32 := (n + 31) &^ 31
	buf := requantRows8.get(n32)
	defer requantRows8.put(buf)
	row := unsafe.Slice((*Y)(unsafe.Pointer(unsafe.SliceData(*buf))), n32) // a byte each
	for j := range m {
		ch := ch0 + j
		var bias int32
		if rq.bias != nil {
			bias = rq.bias[ch]
		}
		if corr != nil {
			bias += corr[ch]
		}
		e := min(len(sums), j*n+n32)
		requantRow(row[:e-j*n], sums[j*n:e], bias, rq.mult[min(ch, len(rq.mult)-1)], nil, rq.zp)
		place(y[j*P:], row[:n])
	}
}

// packConvWUb packs W (m x k per group's rows, less its zero points: one
// per output channel, or one in all) for ubgemm, per group, with its rows'
// sums; nil where a row does not fit (ubFits).
func packConvWUb(w nd.Array, wz []int32, m, k, group int) *shiftedOperand {
	v := func(i, p int) int32 {
		if w.Type == nd.Int8 {
			return int32(int8(w.Data[i*k+p])) - zpAt(wz, i)
		}
		return int32(w.Data[i*k+p]) - zpAt(wz, i)
	}
	for i := range m {
		if !ubFits(k, func(p int) int32 { return v(i, p) }) {
			return nil
		}
	}
	mg := m / group
	op := &shiftedOperand{ub: make([][]byte, group), sums: make([]int32, m)}
	for g := range op.ub {
		op.ub[g] = make([]byte, ubASize(mg, k))
		ubPackA(op.ub[g], mg, k, func(i, p int) byte { return byte(int8(v(g*mg+i, p))) })
	}
	for i := range m {
		for p := range k {
			op.sums[i] += v(i, p)
		}
	}
	return op
}
