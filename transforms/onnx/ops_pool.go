package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// MaxPool (opsets 1, 8, 10, 11, 12), AveragePool (1, 7, 10, 11) and
// GlobalAveragePool (1), over 1 to 3 spatial axes (ops_window.go has the
// window's attributes). MaxPool 8 adds the Indices output (flat indices
// into X, per storage_order: 0 row-major, 1 column-major within each
// plane), 10 ceil_mode and dilations, 12 int8 and uint8 inputs.
// AveragePool 7 adds count_include_pad, 10 ceil_mode; a window's divisor
// is the elements it covers inside the input, or with count_include_pad
// inside the padded input (as PyTorch and ONNX Runtime: a ceil_mode window
// past the padding counts only up to its end). Versions 11 change only the
// words on auto_pad. Direct loops over the output positions, planes (N x C)
// spread over the cores; float32 MaxPool without Indices over 1 or 2 axes
// runs in AVX-512 or AVX2 on the depthwise convolution's layout (maxPoolVector).

func init() {
	RegisterOp(OpDef{Name: "MaxPool", Versions: []int{1, 8, 10, 11, 12}, New: newMaxPool})
	RegisterOp(OpDef{Name: "AveragePool", Versions: []int{1, 7, 10, 11}, New: newAvgPool})
	RegisterOp(OpDef{Name: "GlobalAveragePool", Versions: []int{1}, New: func(n *Node) (Kernel, error) {
		return globalAvgPool{}, n.CheckArity(1, 1, 1, 1)
	}})
}

type pool struct {
	since    int
	max      bool
	win      window
	colMajor bool // MaxPool's storage_order=1
	inclPad  bool // AveragePool's count_include_pad=1
}

func newMaxPool(n *Node) (Kernel, error) {
	maxOut := 2
	if n.Since < 8 {
		maxOut = 1
	}
	if err := n.CheckArity(1, 1, 1, maxOut); err != nil {
		return nil, err
	}
	a := n.Attrs
	p := &pool{since: n.Since, max: true, win: readWindow(a, true, n.Since >= 10, n.Since >= 10)}
	if n.Since >= 8 {
		p.colMajor = a.Flag("storage_order", false)
	}
	return p, a.Err()
}

func newAvgPool(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	p := &pool{since: n.Since, win: readWindow(a, true, false, n.Since >= 10)}
	if n.Since >= 7 {
		p.inclPad = a.Flag("count_include_pad", false)
	}
	return p, a.Err()
}

func (p *pool) geometry(x []int) (geometry, error) {
	_, _, sp, err := spatial(x, "X")
	if err != nil {
		return geometry{}, err
	}
	if len(p.win.kernel) != len(sp) {
		return geometry{}, fmt.Errorf("input X has shape %s (%d spatial axes), attribute kernel_shape %v", nd.ShapeString(x), len(sp), p.win.kernel)
	}
	return p.win.geometry(sp, p.win.kernel)
}

func (p *pool) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	switch {
	case x.Type == nd.Float32 || x.Type == nd.Float64:
	case p.max && p.since >= 12 && (x.Type == nd.Int8 || x.Type == nd.Uint8):
	case p.max && p.since >= 12:
		return nil, fmt.Errorf("input X is %v: MaxPool takes float32, float64, int8 or uint8", x.Type)
	default:
		return nil, fmt.Errorf("input X is %v: want float32 or float64", x.Type)
	}
	g, err := p.geometry(x.Shape)
	if err != nil {
		return nil, err
	}
	shape := g.outShape(x.Shape[0], x.Shape[1])
	return []Meta{{Type: x.Type, Shape: shape}, {Type: nd.Int64, Shape: shape}}, nil
}

func (p *pool) Run(in, out []nd.Array) error {
	x := in[0]
	g, err := p.geometry(x.Shape)
	if err != nil {
		return err
	}
	planes := x.Shape[0] * x.Shape[1]
	if !p.max {
		f, err := floating[avgPoolLoop]("AveragePool", x.Type)
		if err != nil {
			return err
		}
		f.avgPool(g, planes, p.inclPad, x, out[0])
		return nil
	}
	var idx []int64
	if o := arrayAt(out, 1); o.Type != nd.Undefined {
		idx = nd.MustAs[int64](o)
	}
	if x.Type == nd.Float32 && idx == nil && maxPoolVector(g, planes, nd.MustAs[float32](x), nd.MustAs[float32](out[0])) {
		return nil
	}
	f, err := numeric[maxPoolLoop]("MaxPool", x.Type)
	if err != nil {
		return err
	}
	f.maxPool(g, planes, p.colMajor, x, out[0], idx)
	return nil
}

type (
	avgPoolLoop interface {
		avgPool(g geometry, planes int, inclPad bool, x, y nd.Array)
	}
	maxPoolLoop interface {
		maxPool(g geometry, planes int, colMajor bool, x, y nd.Array, idx []int64)
	}
)

func (floats[T]) avgPool(g geometry, planes int, inclPad bool, x, y nd.Array) {
	avgPool(g, planes, inclPad, nd.MustAs[T](x), nd.MustAs[T](y))
}

func (numbers[T, W]) maxPool(g geometry, planes int, colMajor bool, x, y nd.Array, idx []int64) {
	maxPool(g, planes, colMajor, nd.MustAs[T](x), nd.MustAs[T](y), idx, lowest[T]())
}

// windowRange returns the taps k in [0, n) whose input index start + k*dil
// falls in [0, size).
func windowRange(start, n, dil, size int) (lo, hi int) {
	lo, hi = 0, n
	if start < 0 {
		lo = min(n, (-start+dil-1)/dil)
	}
	if last := start + (n-1)*dil; last >= size {
		hi = max(lo, n-((last-size)/dil+1))
	}
	return lo, hi
}

// windows lists, for each output position along one axis, the taps
// [lo, hi) of its window inside the input and the input index of tap 0.
type windows struct{ start, lo, hi []int }

func axisWindows(g geometry, d int) windows {
	var w windows
	for o := range g.out[d] {
		start := o*g.stride[d] - g.padLo[d]
		lo, hi := windowRange(start, g.k[d], g.dil[d], g.in[d])
		w.start, w.lo, w.hi = append(w.start, start), append(w.lo, lo), append(w.hi, hi)
	}
	return w
}

// maxPool computes each plane's window maxima and, when idx is not nil,
// their flat indices into X. A window over padding alone gives lowest and
// index -1; a NaN in a window gives NaN (as ONNX's reference, NumPy's max),
// its index the first NaN's.
func maxPool[T numElem](g geometry, planes int, colMajor bool, x, y []T, idx []int64, lowest T) {
	inSize, outSize := g.inSize(), g.outSize()
	in0, in1, in2 := g.in[0], g.in[1], g.in[2]
	wd, wh, ww := axisWindows(g, 0), axisWindows(g, 1), axisWindows(g, 2)
	dd, dh, dw := g.dil[0], g.dil[1], g.dil[2]
	parallel.For(planes, outSize*g.kSize(), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp := x[pl*inSize : (pl+1)*inSize]
			yp := y[pl*outSize : (pl+1)*outSize]
			o := 0
			for od := range wd.start {
				d0, dlo, dhi := wd.start[od], wd.lo[od], wd.hi[od]
				for oh := range wh.start {
					h0, hlo, hhi := wh.start[oh], wh.lo[oh], wh.hi[oh]
					if idx == nil {
						out := yp[o : o+len(ww.start)]
						for i := range out {
							out[i] = lowest
						}
						for kd := dlo; kd < dhi; kd++ {
							for kh := hlo; kh < hhi; kh++ {
								ih := (d0+kd*dd)*in1 + h0 + kh*dh
								row := xp[ih*in2 : (ih+1)*in2]
								maxRow(out, row, ww, dw)
							}
						}
						o += len(out)
						continue
					}
					for ow := range ww.start {
						w0, wlo, whi := ww.start[ow], ww.lo[ow], ww.hi[ow]
						best, at := lowest, -1
						for kd := dlo; kd < dhi; kd++ {
							for kh := hlo; kh < hhi; kh++ {
								ih := (d0+kd*dd)*in1 + h0 + kh*dh
								row := xp[ih*in2 : (ih+1)*in2]
								for kw := wlo; kw < whi; kw++ {
									if v := row[w0+kw*dw]; v > best || at < 0 || (v != v && best == best) {
										best, at = v, ih*in2+w0+kw*dw
									}
								}
							}
						}
						yp[o] = best
						i := int64(-1)
						if at >= 0 {
							if colMajor {
								iw, ih, id := at%in2, at/in2%in1, at/(in1*in2)
								at = id + ih*in0 + iw*in0*in1
							}
							i = int64(pl*inSize + at)
						}
						idx[pl*outSize+o] = i
						o++
					}
				}
			}
		}
	})
}

// maxRow takes, into each out[i], the maximum of it and row's elements
// under window i along the last axis (Go's max: branch-free, twice as fast
// as a compare on data whose maximum moves about).
func maxRow[T numElem](out, row []T, ww windows, dil int) {
	for i := range out {
		w0, lo, hi := ww.start[i], ww.lo[i], ww.hi[i]
		m := out[i]
		for k := lo; k < hi; k++ {
			m = max(m, row[w0+k*dil])
		}
		out[i] = m
	}
}

// maxPoolVector is MaxPool of float32 planes over 1 or 2 spatial axes
// without Indices, on the vector kernel where the CPU has one (ok false
// otherwise): each plane copied, its padding -Inf, into the depthwise
// convolution's phase-split layout (dwPad), so that every tap of the
// window reads unit-stride runs, then the maxima in 16- or 8-column
// stripes (maxRows).
func maxPoolVector(g geometry, planes int, x, y []float32) (ok bool) {
	if dwWidth == 0 || g.k[0] != 1 || g.in[0] != 1 || g.out[0] != 1 {
		return false
	}
	sh, sw := g.stride[1], g.stride[2]
	oh, ow := g.out[1], g.out[2]
	wq := ow + (g.k[2]-1)*g.dil[2]/sw
	hp := (oh-1)*sh + (g.k[1]-1)*g.dil[1] + 1
	rowLen := sw * wq
	inSize, outSize := g.inSize(), g.outSize()
	parallel.ForWith(planes, inSize+outSize*g.kSize()/4, maxPoolRun{g: g, x: x, y: y, wq: wq, hp: hp, rowLen: rowLen}, (*maxPoolRun).planes)
	return true
}

// maxPoolRun is a run of maxPoolVector.
type maxPoolRun struct {
	g              geometry
	x, y           []float32
	wq, hp, rowLen int
}

// planes computes planes lo..hi of the run.
func (r *maxPoolRun) planes(lo, hi int) {
	g, hp, wq, rowLen := r.g, r.hp, r.wq, r.rowLen
	sh, sw := g.stride[1], g.stride[2]
	oh, ow := g.out[1], g.out[2]
	inSize, outSize := g.inSize(), g.outSize()
	buf := getFloats(hp * rowLen)
	defer putFloats(buf)
	padded := (*buf)[:hp*rowLen]
	// The padding, once for all the planes (dwPad writes the rest).
	negInf := float32(math.Inf(-1))
	for i := range padded {
		padded[i] = negInf
	}
	ss := dwSrcsPool.Get().(*dwSrcs)
	defer dwSrcsPool.Put(ss)
	srcs := ss.s[:0]
	for kh := range g.k[1] {
		for kw := range g.k[2] {
			c := kw * g.dil[2]
			srcs = append(srcs, &padded[kh*g.dil[1]*rowLen+c%sw*wq+c/sw])
		}
	}
	ss.s = srcs
	for pl := lo; pl < hi; pl++ {
		dwPad(padded, r.x[pl*inSize:(pl+1)*inSize], g, hp, wq)
		maxRows(r.y[pl*outSize:(pl+1)*outSize], ow, oh, ow, srcs, sh*rowLen)
	}
	clear(srcs)
}

// avgPool computes each plane's window means.
func avgPool[T float32 | float64](g geometry, planes int, inclPad bool, x, y []T) {
	inSize, outSize := g.inSize(), g.outSize()
	in0, in1, in2 := g.in[0], g.in[1], g.in[2]
	// The padded input's extent, for count_include_pad.
	var end [3]int
	for d := range 3 {
		end[d] = g.in[d] + g.padHi[d]
	}
	parallel.For(planes, outSize*g.kSize(), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp := x[pl*inSize : (pl+1)*inSize]
			yp := y[pl*outSize : (pl+1)*outSize]
			o := 0
			for od := range g.out[0] {
				d0 := od*g.stride[0] - g.padLo[0]
				dlo, dhi := windowRange(d0, g.k[0], 1, in0)
				for oh := range g.out[1] {
					h0 := oh*g.stride[1] - g.padLo[1]
					hlo, hhi := windowRange(h0, g.k[1], 1, in1)
					for ow := range g.out[2] {
						w0 := ow*g.stride[2] - g.padLo[2]
						wlo, whi := windowRange(w0, g.k[2], 1, in2)
						var s T
						for kd := dlo; kd < dhi; kd++ {
							for kh := hlo; kh < hhi; kh++ {
								row := xp[((d0+kd)*in1+h0+kh)*in2:]
								for _, v := range row[w0+wlo : w0+whi] {
									s += v
								}
							}
						}
						n := (dhi - dlo) * (hhi - hlo) * (whi - wlo)
						if inclPad {
							n = padSpan(d0, g.k[0], -g.padLo[0], end[0]) * padSpan(h0, g.k[1], -g.padLo[1], end[1]) * padSpan(w0, g.k[2], -g.padLo[2], end[2])
						}
						yp[o] = s / T(n)
						o++
					}
				}
			}
		}
	})
}

// padSpan is how many of the k positions from start lie in [lo, end).
func padSpan(start, k, lo, end int) int { return min(start+k, end) - max(start, lo) }

// globalAvgPool is GlobalAveragePool: the mean of each plane (N x C x
// D1 ...), output N x C x 1 ...
type globalAvgPool struct{}

func (globalAvgPool) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	if x.Type != nd.Float32 && x.Type != nd.Float64 {
		return nil, fmt.Errorf("input X is %v: want float32 or float64", x.Type)
	}
	if len(x.Shape) < 2 {
		return nil, fmt.Errorf("input X has shape %s: want N x C [x D1 ...]", nd.ShapeString(x.Shape))
	}
	shape := append([]int{}, x.Shape...)
	for i := 2; i < len(shape); i++ {
		shape[i] = 1
	}
	return []Meta{{Type: x.Type, Shape: shape}}, nil
}

func (globalAvgPool) Run(in, out []nd.Array) error {
	x := in[0]
	planes, size := x.Shape[0]*x.Shape[1], numel(x.Shape[2:])
	// Not through floating's loops: a generic function's value made in
	// generic code is a closure over its dictionary, allocated.
	means := planeMeansOf[float32]
	switch x.Type {
	case nd.Float32:
	case nd.Float64:
		means = planeMeansOf[float64]
	default:
		_, err := floating[any]("GlobalAveragePool", x.Type)
		return err
	}
	parallel.ForWith(planes, size, planeMeansRun{x, out[0], size}, means)
	return nil
}

// planeMeansRun is a run of GlobalAveragePool: the mean of each of x's
// planes of size elements to y, summed in float64 (float32 planes by sum4:
// eight partial sums where its AVX2 kernel runs, four elsewhere).
type planeMeansRun struct {
	x, y nd.Array
	size int
}

// planeMeansOf computes planes lo..hi of r.
func planeMeansOf[T float32 | float64](r *planeMeansRun, lo, hi int) {
	x, y := nd.MustAs[T](r.x), nd.MustAs[T](r.y)
	if x32, ok := asF32(x); ok { // float32 planes on the normalizations' vector sums (sum4)
		for p := lo; p < hi; p++ {
			y[p] = T(sum4(x32[p*r.size:(p+1)*r.size]) / float64(r.size))
		}
		return
	}
	for p := lo; p < hi; p++ {
		y[p] = T(sumFloat64(x[p*r.size:(p+1)*r.size]) / float64(r.size))
	}
}
