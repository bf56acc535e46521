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
		var samples []roiSample
		for ri := lo; ri < hi; ri++ {
			g := k.geometry([4]float64{float64(rs[ri*4]), float64(rs[ri*4+1]), float64(rs[ri*4+2]), float64(rs[ri*4+3])})
			// The region's sampling points, the same for every channel:
			// bin by bin, gridH x gridW each.
			samples = k.samples(g, h, w, samples[:0])
			per := len(samples) / max(bins, 1)
			count := float64(max(g.gridH*g.gridW, 1))
			for ci := range c {
				plane := xs[(int(bi[ri])*c+ci)*h*w : (int(bi[ri])*c+ci+1)*h*w]
				out := ys[(ri*c+ci)*bins : (ri*c+ci+1)*bins]
				for b := range out {
					acc, first := 0.0, true
					for _, p := range samples[b*per : (b+1)*per] {
						var v float64
						if p.in {
							a, bb, cc, d := p.w[0]*float64(plane[p.at[0]]), p.w[1]*float64(plane[p.at[1]]), p.w[2]*float64(plane[p.at[2]]), p.w[3]*float64(plane[p.at[3]])
							if k.max {
								v = max(a, bb, cc, d)
							} else {
								v = a + bb + cc + d
							}
						}
						switch {
						case !k.max:
							acc += v
						case first:
							acc, first = v, false
						default:
							acc = max(acc, v)
						}
					}
					if !k.max {
						acc /= count
					}
					out[b] = T(acc)
				}
			}
		}
	})
}

// roiSample is a sampling point of a region: its four corners' offsets in
// a plane and their bilinear weights (in is false outside the plane, where
// the sample is 0).
type roiSample struct {
	at [4]int
	w  [4]float64
	in bool
}

// samples appends region g's sampling points, bin by bin (as bin and
// bilinearSample compute them), to dst.
func (k *roiAlignKernel) samples(g roiGeometry, h, w int, dst []roiSample) []roiSample {
	for ph := range k.oh {
		for pw := range k.ow {
			for iy := range g.gridH {
				y := g.y0 + float64(ph)*g.binH + (float64(iy)+0.5)*g.binH/float64(g.gridH)
				for ix := range g.gridW {
					xx := g.x0 + float64(pw)*g.binW + (float64(ix)+0.5)*g.binW/float64(g.gridW)
					dst = append(dst, bilinearPoint(y, xx, h, w))
				}
			}
		}
	}
	return dst
}

// bilinearPoint is bilinearSample's corners and weights at (y, x).
func bilinearPoint(y, x float64, h, w int) roiSample {
	if y < -1 || y > float64(h) || x < -1 || x > float64(w) {
		return roiSample{}
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
	return roiSample{at: [4]int{yl*w + xl, yl*w + xh, yh*w + xl, yh*w + xh}, w: [4]float64{hy * hx, hy * lx, ly * hx, ly * lx}, in: true}
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
