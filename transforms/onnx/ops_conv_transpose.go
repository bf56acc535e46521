package onnx

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// ConvTranspose (opsets 1, 11): the transposed convolution of 1 to 3
// spatial axes, with groups, strides, dilations, pads, output_padding,
// output_shape and auto_pad.
//
// A transposed convolution is the adjoint of the convolution that maps its
// output to its input: with that convolution's geometry (transposeGeometry:
// its input is Y's spatial shape, its output X's), each image and group is
// one product, the columns W_g^T x X_g (Cout/group x kernel taps rows, one
// column per input position), and col2im adds each column's values into
// the output positions that im2col would have read them from. The product
// is package gemm's on all cores; col2im runs a task per output channel
// (each writes its own plane), over chunks of input positions that keep
// the columns near 64 MiB. Float64 takes a plain loop.
//
// Where output_shape or auto_pad sets the padding, its total is split as
// ONNX's reference and ONNX Runtime split it (convTransposePads).

func init() {
	RegisterOp(OpDef{Name: "ConvTranspose", Versions: []int{1, 11}, New: newConvTranspose})
}

type convTranspose struct {
	win                    window
	group                  int
	outputPadding, outputS []int
	// constW is set when W is a constant: its packing for the products
	// (W_g^T, gemm.PackA) is then made once and kept in packed.
	constW atomic.Bool
	packed atomic.Pointer[convRowWeights]
}

func newConvTranspose(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	c := &convTranspose{win: readWindow(a, false, true, false)}
	g := a.Int("group", 1)
	if g < 1 || g > 1<<31 {
		a.Fail("attribute group is %d, want at least 1", g)
	}
	c.group = int(g)
	ints := func(name string) []int {
		v, ok := a.Ints(name)
		if !ok {
			return nil
		}
		out := make([]int, len(v))
		for i, x := range v {
			if x < 0 || x > 1<<31 {
				a.Fail("attribute %s is %v: each value must be 0 or more", name, v)
			}
			out[i] = int(x)
		}
		return out
	}
	c.outputPadding = ints("output_padding")
	c.outputS = ints("output_shape")
	return c, a.Err()
}

// geometry gives the convolution whose adjoint this is, on X (n x c x
// spatial) and W (c x m/group x kernel): in is Y's spatial shape, out X's.
func (c *convTranspose) geometry(x, w, b []int, hasB bool) (geometry, int, error) {
	_, ch, sp, err := spatial(x, "X")
	if err != nil {
		return geometry{}, 0, err
	}
	nsp := len(sp)
	if len(w) != len(x) {
		return geometry{}, 0, fmt.Errorf("input W has shape %s, X %s: want W of rank %d (C x M/group x kernel)", nd.ShapeString(w), nd.ShapeString(x), len(x))
	}
	if w[0] != ch {
		return geometry{}, 0, fmt.Errorf("input W has shape %s: its first axis must be X's %d channels", nd.ShapeString(w), ch)
	}
	if ch%c.group != 0 {
		return geometry{}, 0, fmt.Errorf("input X has %d channels, not a multiple of group %d", ch, c.group)
	}
	m := w[1] * c.group
	kernel := w[2:]
	for _, k := range kernel {
		if k < 1 {
			return geometry{}, 0, fmt.Errorf("input W has shape %s: kernel sizes must be at least 1", nd.ShapeString(w))
		}
	}
	if c.win.kernel != nil && !nd.SameShape(c.win.kernel, kernel) {
		return geometry{}, 0, fmt.Errorf("attribute kernel_shape %v disagrees with W's shape %s", c.win.kernel, nd.ShapeString(w))
	}
	if hasB && (len(b) != 1 || b[0] != m) {
		return geometry{}, 0, fmt.Errorf("input B has shape %s, want [%d] (the output channels)", nd.ShapeString(b), m)
	}
	if err := c.win.checkRank(nsp); err != nil {
		return geometry{}, 0, err
	}
	if c.outputPadding != nil && len(c.outputPadding) != nsp {
		return geometry{}, 0, fmt.Errorf("attribute output_padding has %d values, want %d", len(c.outputPadding), nsp)
	}
	outShape := c.outputS
	if len(outShape) == nsp+2 {
		outShape = outShape[2:]
	}
	if outShape != nil && len(outShape) != nsp {
		return geometry{}, 0, fmt.Errorf("attribute output_shape has %d values, want %d (the spatial axes)", len(c.outputS), nsp)
	}
	g := geometry{nd: nsp}
	for i := range 3 {
		g.in[i], g.out[i], g.k[i], g.stride[i], g.dil[i] = 1, 1, 1, 1, 1
	}
	for i := range nsp {
		d := 3 - nsp + i
		g.out[d], g.k[d] = sp[i], kernel[i]
		if c.win.strides != nil {
			g.stride[d] = c.win.strides[i]
		}
		if c.win.dilations != nil {
			g.dil[d] = c.win.dilations[i]
		}
		adj := 0
		if c.outputPadding != nil {
			adj = c.outputPadding[i]
		}
		if adj >= g.stride[d] && adj >= g.dil[d] {
			return geometry{}, 0, fmt.Errorf("attribute output_padding %v: each must be less than its stride or dilation", c.outputPadding)
		}
		ext := (g.k[d]-1)*g.dil[d] + 1
		full := (sp[i]-1)*g.stride[d] + adj + ext // the output with no padding
		switch {
		case outShape != nil:
			g.in[d] = outShape[i]
			g.padLo[d], g.padHi[d] = convTransposePads(max(0, full-g.in[d]), c.win.autoPad == "SAME_LOWER")
		case c.win.autoPad == "SAME_UPPER" || c.win.autoPad == "SAME_LOWER":
			g.in[d] = sp[i] * g.stride[d]
			g.padLo[d], g.padHi[d] = convTransposePads(max(0, full-g.in[d]), c.win.autoPad == "SAME_LOWER")
		default:
			if c.win.pads != nil && c.win.autoPad != "VALID" {
				g.padLo[d], g.padHi[d] = c.win.pads[i], c.win.pads[nsp+i]
			}
			g.in[d] = full - g.padLo[d] - g.padHi[d]
		}
		if g.in[d] < 0 {
			return geometry{}, 0, fmt.Errorf("spatial axis %d: the output would have %d elements (pads %d and %d)", i, g.in[d], g.padLo[d], g.padHi[d])
		}
	}
	return g, m, nil
}

// convTransposePads splits a total padding as ONNX's reference and ONNX
// Runtime do: the odd one at the head for SAME_LOWER, at the tail
// otherwise (SAME_UPPER, and output_shape without auto_pad).
func convTransposePads(total int, lower bool) (lo, hi int) {
	if lower {
		return total - total/2, total / 2
	}
	return total / 2, total - total/2
}

func (c *convTranspose) Infer(in []Meta) ([]Meta, error) {
	x, w, b := in[0], in[1], metaAt(in, 2)
	if x.Type != nd.Float32 && x.Type != nd.Float64 {
		return nil, fmt.Errorf("input X is %v: ConvTranspose takes float32 or float64 (float16 computes as float32)", x.Type)
	}
	if w.Type != x.Type || (b.Type != nd.Undefined && b.Type != x.Type) {
		return nil, sameTypeErr([]string{"X", "W", "B"}, x, w, b)
	}
	g, m, err := c.geometry(x.Shape, w.Shape, b.Shape, b.Type != nd.Undefined)
	if err != nil {
		return nil, err
	}
	if w.Value != nil {
		c.constW.Store(true)
	}
	return []Meta{{Type: x.Type, Shape: transposeOutShape(g, x.Shape[0], m)}}, nil
}

// transposeOutShape is Y's shape: n, m, then the geometry's input sizes.
func transposeOutShape(g geometry, n, m int) []int {
	return append([]int{n, m}, g.in[3-g.nd:]...)
}

func (c *convTranspose) Run(in, out []nd.Array) error {
	x, w, b, y := in[0], in[1], arrayAt(in, 2), out[0]
	g, m, err := c.geometry(x.Shape, w.Shape, b.Shape, b.Type != nd.Undefined)
	if err != nil {
		return err
	}
	p := convProblem{geo: g, n: x.Shape[0], c: x.Shape[1], m: m, group: c.group}
	if x.Type == nd.Float64 {
		convTransposeDirect(p, nd.MustAs[float64](x), nd.MustAs[float64](w), asOr[float64](b), nd.MustAs[float64](y))
		return nil
	}
	convTransposeGemm(p, nd.MustAs[float32](x), nd.MustAs[float32](w), c.weights(w, p), asOr[float32](b), nd.MustAs[float32](y))
	return nil
}

// weights returns a constant W packed per group as the products' A
// operand, W_g^T (Cout/group x K rows, C/group columns), packed on first
// use and kept; nil where W is not a constant.
func (c *convTranspose) weights(w nd.Array, p convProblem) []*gemm.PackedA {
	if !c.constW.Load() {
		return nil
	}
	src := unsafe.SliceData(w.Data)
	if pk := c.packed.Load(); pk != nil && pk.src == src {
		return pk.groups
	}
	ws := nd.MustAs[float32](w)
	cg, rows := p.c/p.group, p.m/p.group*p.geo.kSize()
	pk := &convRowWeights{src: src, groups: make([]*gemm.PackedA, p.group)}
	for g := range pk.groups {
		pk.groups[g] = gemm.PackA(true, rows, cg, ws[g*cg*rows:(g+1)*cg*rows], rows)
	}
	c.packed.Store(pk)
	return pk.groups
}

// convTransposeChunkFloats bounds one product's columns (64 MiB; a
// variable for the tests, which cut the input positions into small chunks).
var convTransposeChunkFloats = 16 << 20

// convTransposeGemm computes a float32 transposed convolution: per image
// and group, the columns W_g^T X_g in chunks of input positions, each
// added into the output by col2im. wa is W_g^T packed per group
// (convTranspose.weights), or nil: W is then packed for each product. The
// bits are the same.
func convTransposeGemm(p convProblem, x, w []float32, wa []*gemm.PackedA, bias, y []float32) {
	g := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	K := g.kSize()
	P, Q := g.outSize(), g.inSize() // input positions, output positions
	r := col2imRun{g: g, bias: bias, m: p.m, q: Q, k: K}
	r.y = y
	parallel.ForWith(p.n*p.m, Q, r, (*col2imRun).fill)
	if cg == 0 || P == 0 {
		return
	}
	rows := mg * K
	chunk := max(1, min(P, convTransposeChunkFloats/max(1, rows)))
	buf := getFloats(rows * chunk)
	defer putFloats(buf)
	workers := runtime.GOMAXPROCS(0)
	for img := range p.n {
		for grp := range p.group {
			xg := x[(img*p.c+grp*cg)*P:]
			yg := y[(img*p.m+grp*mg)*Q:]
			for p0 := 0; p0 < P; p0 += chunk {
				n := min(chunk, P-p0)
				cols := (*buf)[:rows*n]
				// cols (mg*K x n) = W_g^T (mg*K x cg) x X_g[:, p0:p0+n] (cg x n)
				if wa != nil {
					gemm.SgemmPackedA(workers, wa[grp], false, n, 1, xg[p0:], P, 0, cols, n)
				} else {
					wg := w[grp*cg*rows : (grp+1)*cg*rows] // cg x (mg x K)
					gemm.SgemmWorkers(workers, true, false, rows, n, cg, 1, wg, rows, xg[p0:], P, 0, cols, n)
				}
				r.y, r.cols, r.p0, r.n = yg, cols, p0, n
				parallel.ForWith(mg, 2*K*n, r, (*col2imRun).planes)
			}
		}
	}
}

// col2imRun is a transposed convolution's: the output's planes (q values
// each, m per image) first filled with the bias, then each chunk's columns
// (k rows of n per output channel, from input position p0) added in.
type col2imRun struct {
	g       geometry
	y, bias []float32
	cols    []float32
	m, q, k int
	p0, n   int
}

// fill sets planes lo..hi to their bias, or 0.
func (r *col2imRun) fill(lo, hi int) {
	for t := lo; t < hi; t++ {
		if r.bias != nil {
			fillCopies(r.y[t*r.q:(t+1)*r.q], r.bias[t%r.m])
		} else {
			clear(r.y[t*r.q : (t+1)*r.q])
		}
	}
}

// planes adds the columns of output channels lo..hi into their planes.
func (r *col2imRun) planes(lo, hi int) {
	kn := r.k * r.n
	for co := lo; co < hi; co++ {
		col2im(r.y[co*r.q:(co+1)*r.q], r.cols[co*kn:(co+1)*kn], r.g, r.p0, r.n)
	}
}

// col2im adds the columns of one channel (kernel taps rows of n values,
// for input positions p0..p0+n flat over X's spatial axes) into its output
// plane y: the adjoint of im2col, each value to the output position that
// im2col reads for that tap and position. With stride 2 and no dilation
// along the last axis, taps kw and kw+1 write the even and the odd
// positions of one span: they are added as one interleaved pass (addPairs,
// in AVX2 where there is one). Each output value takes its terms in the
// same order either way (a pair's two taps write different values), so
// the bits are the same.
func col2im(y, cols []float32, g geometry, p0, n int) {
	oh, ow := g.out[1], g.out[2] // X's spatial sizes
	in0, in1, in2 := g.in[0], g.in[1], g.in[2]
	s := g.stride[2]
	pairs := s == 2 && g.dil[2] == 1
	row := 0
	for kd := range g.k[0] {
		for kh := range g.k[1] {
			for kw := 0; kw < g.k[2]; kw++ {
				src := cols[row*n : (row+1)*n]
				row++
				var src2 []float32 // the next tap's, where the two go as a pair
				if pairs && kw+1 < g.k[2] {
					src2 = cols[row*n : (row+1)*n]
					row++
				}
				offD, offH, offW := kd*g.dil[0]-g.padLo[0], kh*g.dil[1]-g.padLo[1], kw*g.dil[2]-g.padLo[2]
				for p := p0; p < p0+n; {
					r, w0 := p/ow, p%ow
					cnt := min(ow-w0, p0+n-p)
					vals := src[p-p0 : p-p0+cnt]
					var vals2 []float32
					if src2 != nil {
						vals2 = src2[p-p0 : p-p0+cnt]
					}
					p += cnt
					id, ih := r/oh*g.stride[0]+offD, r%oh*g.stride[1]+offH
					if id < 0 || id >= in0 || ih < 0 || ih >= in1 {
						continue
					}
					dst := y[(id*in1+ih)*in2:][:in2]
					iw := w0*s + offW
					lo, hi := tapSpan(iw, cnt, s, in2)
					if vals2 == nil {
						addStrided(dst, vals, iw, s, lo, hi)
						continue
					}
					// The pair: the common span interleaved, each tap's ends alone.
					lo2, hi2 := tapSpan(iw+1, cnt, s, in2)
					a, b := max(lo, lo2), min(hi, hi2)
					if a >= b {
						addStrided(dst, vals, iw, s, lo, hi)
						addStrided(dst, vals2, iw+1, s, lo2, hi2)
						continue
					}
					addPairs(dst[iw+2*a:iw+2*b], vals[a:b], vals2[a:b])
					addStrided(dst, vals, iw, s, lo, a)
					addStrided(dst, vals, iw, s, b, hi)
					addStrided(dst, vals2, iw+1, s, lo2, a)
					addStrided(dst, vals2, iw+1, s, b, hi2)
				}
				if src2 != nil {
					kw++
				}
			}
		}
	}
}

// tapSpan is the part lo..hi of a run of cnt input positions whose output
// positions iw, iw+s, ... fall inside 0..in2.
func tapSpan(iw, cnt, s, in2 int) (lo, hi int) {
	if iw < 0 {
		lo = min(cnt, (-iw+s-1)/s)
	}
	hi = cnt
	if last := iw + (cnt-1)*s; last >= in2 {
		hi = max(lo, cnt-((last-in2)/s+1))
	}
	return lo, hi
}

// addStrided adds vals[lo:hi] to dst at iw + i*s for each i.
func addStrided(dst, vals []float32, iw, s, lo, hi int) {
	if lo >= hi {
		return
	}
	if s == 1 {
		d := dst[iw+lo : iw+hi]
		for i, v := range vals[lo:hi] {
			d[i] += v
		}
		return
	}
	j := iw + lo*s
	for _, v := range vals[lo:hi] {
		dst[j] += v
		j += s
	}
}

// addPairs adds a and b interleaved to d: d[2i] += a[i], d[2i+1] += b[i]
// (len(d) is 2 len(a), len(b) len(a)); whole vectors of 8 pairs in
// addPairsVec's kernel where there is one, the rest in Go.
func addPairs(d, a, b []float32) {
	b, d = b[:len(a)], d[:2*len(a)]
	for i := addPairsVec(d, a, b); i < len(a); i++ {
		d[2*i] += a[i]
		d[2*i+1] += b[i]
	}
}

// convTransposeDirect is a transposed convolution by plain loops (float64):
// each input value times each tap, added at its output position.
func convTransposeDirect[T float32 | float64](p convProblem, x, w, bias, y []T) {
	g := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	P, Q, K := g.outSize(), g.inSize(), g.kSize()
	parallel.For(p.n*p.m, P*cg*K, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			img, m := t/p.m, t%p.m
			grp, co := m/mg, m%mg
			out := y[t*Q : (t+1)*Q]
			for i := range out {
				out[i] = 0
				if bias != nil {
					out[i] = bias[m]
				}
			}
			for ci := range cg {
				c := grp*cg + ci
				xc := x[(img*p.c+c)*P:]
				wc := w[(c*mg+co)*K:]
				for xd := range g.out[0] {
					for xh := range g.out[1] {
						for xw := range g.out[2] {
							v := xc[(xd*g.out[1]+xh)*g.out[2]+xw]
							for kd := range g.k[0] {
								od := xd*g.stride[0] - g.padLo[0] + kd*g.dil[0]
								if od < 0 || od >= g.in[0] {
									continue
								}
								for kh := range g.k[1] {
									oh := xh*g.stride[1] - g.padLo[1] + kh*g.dil[1]
									if oh < 0 || oh >= g.in[1] {
										continue
									}
									for kw := range g.k[2] {
										ow := xw*g.stride[2] - g.padLo[2] + kw*g.dil[2]
										if ow < 0 || ow >= g.in[2] {
											continue
										}
										out[(od*g.in[1]+oh)*g.in[2]+ow] += v * wc[(kd*g.k[1]+kh)*g.k[2]+kw]
									}
								}
							}
						}
					}
				}
			}
		}
	})
}
