package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// RoiAlign (opsets 10, 16): for each region of interest (rois [R, 4], x1,
// y1, x2, y2 in the input's coordinates times spatial_scale; batch_indices
// [R] int64 naming its image of X [N, C, H, W]), an output_height x
// output_width grid of bins, each the average (mode avg) or the maximum
// (mode max) of sampling_ratio² bilinear samples (0: ceil(the bin's size)
// per axis), as ONNX Runtime computes them (max: the largest of each
// sample's four weighted corners). coordinate_transformation_mode (16)
// half_pixel, the default from 16, shifts the region by half a pixel;
// output_half_pixel (opset 10's behaviour) does not and makes every region
// at least one pixel. A batch index out of range is an error naming it.
// Samples are computed in float64 and rounded once.

func init() {
	RegisterOp(OpDef{Name: "RoiAlign", Versions: []int{10, 16}, New: newRoiAlign})
}

type roiAlignKernel struct {
	max       bool
	oh, ow    int
	sampling  int
	scale     float64
	halfPixel bool
}

func newRoiAlign(n *Node) (Kernel, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	mode := a.String("mode", "avg")
	a.OneOf("mode", mode, "avg", "max")
	k := &roiAlignKernel{max: mode == "max", oh: int(a.Int("output_height", 1)), ow: int(a.Int("output_width", 1)),
		sampling: int(a.Int("sampling_ratio", 0)), scale: float64(a.Float("spatial_scale", 1))}
	if n.Since >= 16 {
		ct := a.String("coordinate_transformation_mode", "half_pixel")
		a.OneOf("coordinate_transformation_mode", ct, "half_pixel", "output_half_pixel")
		k.halfPixel = ct == "half_pixel"
	}
	if k.oh < 1 || k.ow < 1 || k.oh > 1<<16 || k.ow > 1<<16 || k.sampling < 0 || k.sampling > 1<<10 {
		a.Fail("attributes output_height %d, output_width %d, sampling_ratio %d: want sizes of at least 1 and a ratio of at least 0", k.oh, k.ow, k.sampling)
	}
	return k, a.Err()
}

func (k *roiAlignKernel) Infer(in []Meta) ([]Meta, error) {
	x, rois, bi := in[0], in[1], in[2]
	if !x.Type.IsFloat() || rois.Type != x.Type || bi.Type != nd.Int64 {
		return nil, fmt.Errorf("inputs X, rois and batch_indices are %v, %v and %v: RoiAlign takes floats of one type and int64", x.Type, rois.Type, bi.Type)
	}
	if len(x.Shape) != 4 || len(rois.Shape) != 2 || rois.Shape[1] != 4 || len(bi.Shape) != 1 || bi.Shape[0] != rois.Shape[0] {
		return nil, fmt.Errorf("inputs X, rois and batch_indices have shapes %s, %s and %s: RoiAlign takes [N, C, H, W], [R, 4] and [R]",
			nd.ShapeString(x.Shape), nd.ShapeString(rois.Shape), nd.ShapeString(bi.Shape))
	}
	if hw := x.Shape[2] * x.Shape[3]; hw > math.MaxInt32 {
		return nil, fmt.Errorf("input X has planes of %d values: RoiAlign takes at most %d (its offsets are int32)", hw, math.MaxInt32)
	}
	return []Meta{{Type: x.Type, Shape: []int{rois.Shape[0], x.Shape[1], k.oh, k.ow}}}, nil
}

func (k *roiAlignKernel) Run(in, out []nd.Array) error {
	x, bi := in[0], nd.MustAs[int64](in[2])
	n := x.Shape[0]
	for i, b := range bi {
		if b < 0 || b >= int64(n) {
			return fmt.Errorf("batch index %d (element %d of batch_indices) is out of range for %d images", b, i, n)
		}
	}
	f, err := floating[roiAlignLoop]("RoiAlign", x.Type)
	if err != nil {
		return err
	}
	f.roiAlign(k, x, in[1], bi, out[0])
	return nil
}

type roiAlignLoop interface {
	roiAlign(k *roiAlignKernel, x, rois nd.Array, bi []int64, y nd.Array)
}

func (floats[T]) roiAlign(k *roiAlignKernel, x, rois nd.Array, bi []int64, y nd.Array) {
	xs, rs, ys := nd.MustAs[T](x), nd.MustAs[T](rois), nd.MustAs[T](y)
	c, h, w := x.Shape[1], x.Shape[2], x.Shape[3]
	r := rois.Shape[0]
	bins := k.oh * k.ow
	parallel.For(r, c*bins*16, func(lo, hi int) {
		var s roiSamples
		for ri := lo; ri < hi; ri++ {
			g := k.geometry([4]float64{float64(rs[ri*4]), float64(rs[ri*4+1]), float64(rs[ri*4+2]), float64(rs[ri*4+3])})
			// The region's sampling points, the same for every channel.
			s.make(k, g, h, w)
			count := float64(max(g.gridH*g.gridW, 1))
			planes := xs[int(bi[ri])*c*h*w : (int(bi[ri])+1)*c*h*w]
			out := ys[ri*c*bins : (ri+1)*c*bins]
			ci := 0
			if !k.max {
				// Four channels at a time: four sums in flight, each
				// point's offsets and weights read once for the four.
				for ; ci+4 <= c; ci += 4 {
					roiAvg4(&s, planes[ci*h*w:(ci+4)*h*w], h*w, out[ci*bins:(ci+4)*bins], bins, count)
				}
			}
			for ; ci < c; ci++ {
				plane, o := planes[ci*h*w:(ci+1)*h*w], out[ci*bins:(ci+1)*bins]
				for b := range o {
					o[b] = T(roiBinOf(&s, b, plane, k.max, count))
				}
			}
		}
	})
}

// roiSamples are a region's sampling points inside the plane, bin by bin
// (bin b's are pts[start[b]:start[b+1]]), and whether each bin has one
// outside (out[b]), whose sample is 0.
//
// A bin's average sums its points in order: the 0 of a point outside adds
// nothing (the sum starts at +0 and so is never -0), and is left out. A
// bin's maximum takes that 0 as one of its samples where out[b].
type roiSamples struct {
	pts   []roiPoint
	start []int32
	out   []bool
}

// roiPoint is a sampling point inside the plane: its four corners'
// offsets in the plane and their bilinear weights.
type roiPoint struct {
	at [4]int32
	w  [4]float64
}

// make sets s to region g's sampling points (as bin and bilinearSample
// compute them) over an h x w plane.
func (s *roiSamples) make(k *roiAlignKernel, g roiGeometry, h, w int) {
	s.pts, s.start, s.out = s.pts[:0], append(s.start[:0], 0), s.out[:0]
	for ph := range k.oh {
		for pw := range k.ow {
			out := false
			for iy := range g.gridH {
				y := g.y0 + float64(ph)*g.binH + (float64(iy)+0.5)*g.binH/float64(g.gridH)
				for ix := range g.gridW {
					xx := g.x0 + float64(pw)*g.binW + (float64(ix)+0.5)*g.binW/float64(g.gridW)
					if p, in := bilinearPoint(y, xx, h, w); in {
						s.pts = append(s.pts, p)
					} else {
						out = true
					}
				}
			}
			s.start = append(s.start, int32(len(s.pts)))
			s.out = append(s.out, out)
		}
	}
}

// roiBinOf is bin b of a plane: the average of its samples (their sum
// over count), or with mx their maximum (of each, the largest of its four
// weighted corners).
func roiBinOf[T floatElem](s *roiSamples, b int, plane []T, mx bool, count float64) float64 {
	pts := s.pts[s.start[b]:s.start[b+1]]
	if !mx {
		acc := 0.0
		for i := range pts {
			p := &pts[i]
			acc += p.w[0]*float64(plane[p.at[0]]) + p.w[1]*float64(plane[p.at[1]]) + p.w[2]*float64(plane[p.at[2]]) + p.w[3]*float64(plane[p.at[3]])
		}
		return acc / count
	}
	acc, first := 0.0, !s.out[b]
	for i := range pts {
		p := &pts[i]
		v := max(p.w[0]*float64(plane[p.at[0]]), p.w[1]*float64(plane[p.at[1]]), p.w[2]*float64(plane[p.at[2]]), p.w[3]*float64(plane[p.at[3]]))
		if first {
			acc, first = v, false
		} else {
			acc = max(acc, v)
		}
	}
	return acc
}

// roiAvg4 writes the averages of four channels' bins (planes: their four
// planes of hw values; out: their bins, bins each), each summed as
// roiBinOf sums it.
func roiAvg4[T floatElem](s *roiSamples, planes []T, hw int, out []T, bins int, count float64) {
	p0, p1, p2, p3 := planes[:hw], planes[hw:2*hw], planes[2*hw:3*hw], planes[3*hw:4*hw]
	o0, o1, o2, o3 := out[:bins], out[bins:2*bins], out[2*bins:3*bins], out[3*bins:4*bins]
	for b := range o0 {
		var a0, a1, a2, a3 float64
		for _, p := range s.pts[s.start[b]:s.start[b+1]] {
			i0, i1, i2, i3 := p.at[0], p.at[1], p.at[2], p.at[3]
			w0, w1, w2, w3 := p.w[0], p.w[1], p.w[2], p.w[3]
			a0 += w0*float64(p0[i0]) + w1*float64(p0[i1]) + w2*float64(p0[i2]) + w3*float64(p0[i3])
			a1 += w0*float64(p1[i0]) + w1*float64(p1[i1]) + w2*float64(p1[i2]) + w3*float64(p1[i3])
			a2 += w0*float64(p2[i0]) + w1*float64(p2[i1]) + w2*float64(p2[i2]) + w3*float64(p2[i3])
			a3 += w0*float64(p3[i0]) + w1*float64(p3[i1]) + w2*float64(p3[i2]) + w3*float64(p3[i3])
		}
		o0[b], o1[b], o2[b], o3[b] = T(a0/count), T(a1/count), T(a2/count), T(a3/count)
	}
}

// bilinearPoint is bilinearSample's corners and weights at (y, x), and
// whether (y, x) is inside [-1, h] x [-1, w] (else the sample is 0).
func bilinearPoint(y, x float64, h, w int) (roiPoint, bool) {
	if y < -1 || y > float64(h) || x < -1 || x > float64(w) {
		return roiPoint{}, false
	}
	y, x = max(y, 0), max(x, 0)
	yl, xl := int(y), int(x)
	yh, xh := yl+1, xl+1
	if yl >= h-1 {
		yl, yh, y = h-1, h-1, float64(h-1)
	}
	if xl >= w-1 {
		xl, xh, x = w-1, w-1, float64(w-1)
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	return roiPoint{at: [4]int32{int32(yl*w + xl), int32(yl*w + xh), int32(yh*w + xl), int32(yh*w + xh)}, w: [4]float64{hy * hx, hy * lx, ly * hx, ly * lx}}, true
}

// roiGeometry is one region's start, bin size and sampling grid.
type roiGeometry struct {
	y0, x0, binH, binW float64
	gridH, gridW       int
}

func (k *roiAlignKernel) geometry(roi [4]float64) roiGeometry {
	off := 0.0
	if k.halfPixel {
		off = 0.5
	}
	x0, y0 := roi[0]*k.scale-off, roi[1]*k.scale-off
	rw, rh := roi[2]*k.scale-off-x0, roi[3]*k.scale-off-y0
	if !k.halfPixel {
		rw, rh = max(rw, 1), max(rh, 1)
	}
	g := roiGeometry{y0: y0, x0: x0, binH: rh / float64(k.oh), binW: rw / float64(k.ow), gridH: k.sampling, gridW: k.sampling}
	if k.sampling == 0 {
		g.gridH, g.gridW = int(math.Ceil(rh/float64(k.oh))), int(math.Ceil(rw/float64(k.ow)))
	}
	return g
}
