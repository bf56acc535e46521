package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RoiAlign with its sampling points computed once per region gives, bit for
// bit, what computing each bin of each channel on its own gives (roiBin, the
// kernel's former loop): average and max modes, half_pixel or not, fixed
// and adaptive sampling, regions partly and wholly outside the map, channel
// counts below and above the four the average takes at a time, float32
// and float64.
func TestRoiAlignMatchesPerBin(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 16))
	for trial := range 64 {
		k := &roiAlignKernel{oh: 1 + r.IntN(4), ow: 1 + r.IntN(5), sampling: r.IntN(3), scale: 0.5 + r.Float64(), halfPixel: trial%2 == 0, max: trial%4 >= 2}
		n, c, h, w, nr := 2, 1+r.IntN(10), 3+r.IntN(9), 3+r.IntN(9), 1+r.IntN(6)
		x := float32Array([]int{n, c, h, w})
		for i := range nd.MustAs[float32](x) {
			nd.MustAs[float32](x)[i] = float32(r.NormFloat64())
		}
		rois := float32Array([]int{nr, 4})
		bi := make([]int64, nr)
		for i := range nr {
			x1, y1 := float32(r.Float64()*float64(w)*1.5-4), float32(r.Float64()*float64(h)*1.5-4)
			copy(nd.MustAs[float32](rois)[i*4:], []float32{x1, y1, x1 + float32(r.Float64()*float64(w)), y1 + float32(r.Float64()*float64(h))})
			bi[i] = int64(r.IntN(n))
		}
		got := float32Array([]int{nr, c, k.oh, k.ow})
		floats[float32]{}.roiAlign(k, x, rois, bi, got)
		// and in float64, of the same values.
		x64, err := nd.Convert(x, nd.Float64)
		require.NoError(t, err)
		rois64, err := nd.Convert(rois, nd.Float64)
		require.NoError(t, err)
		got64 := nd.Array{Type: nd.Float64, Shape: got.Shape, Data: make([]byte, 8*got.Len())}
		floats[float64]{}.roiAlign(k, x64, rois64, bi, got64)
		xs, rs := nd.MustAs[float32](x), nd.MustAs[float32](rois)
		for ri := range nr {
			g := k.geometry([4]float64{float64(rs[ri*4]), float64(rs[ri*4+1]), float64(rs[ri*4+2]), float64(rs[ri*4+3])})
			for ci := range c {
				plane := xs[(int(bi[ri])*c+ci)*h*w:]
				at := func(i int) float64 { return float64(plane[i]) }
				for ph := range k.oh {
					for pw := range k.ow {
						want := roiBin(k, g, ph, pw, h, w, at)
						o := ((ri*c+ci)*k.oh+ph)*k.ow + pw
						assert.Equal(t, math.Float32bits(float32(want)), math.Float32bits(nd.MustAs[float32](got)[o]), "trial %d roi %d channel %d bin %d,%d", trial, ri, ci, ph, pw)
						assert.Equal(t, math.Float64bits(want), math.Float64bits(nd.MustAs[float64](got64)[o]), "float64: trial %d roi %d channel %d bin %d,%d", trial, ri, ci, ph, pw)
					}
				}
			}
		}
	}
}

// roiBin is output bin (ph, pw) of region g over a plane of h x w values.
func roiBin(k *roiAlignKernel, g roiGeometry, ph, pw, h, w int, at func(int) float64) float64 {
	count := max(g.gridH*g.gridW, 1)
	acc, first := 0.0, true
	for iy := range g.gridH {
		y := g.y0 + float64(ph)*g.binH + (float64(iy)+0.5)*g.binH/float64(g.gridH)
		for ix := range g.gridW {
			xx := g.x0 + float64(pw)*g.binW + (float64(ix)+0.5)*g.binW/float64(g.gridW)
			v := bilinearRef(y, xx, h, w, at, k.max)
			switch {
			case !k.max:
				acc += v
			case first:
				acc, first = v, false
			default:
				acc = max(acc, v)
			}
		}
	}
	if !k.max {
		return acc / float64(count)
	}
	return acc
}

// bilinearRef is the bilinear interpolation at (y, x), 0 outside [-1,
// h] x [-1, w]; with mx the largest of the four weighted corners instead of
// their sum (ONNX Runtime's max mode).
func bilinearRef(y, x float64, h, w int, at func(int) float64, mx bool) float64 {
	if y < -1 || y > float64(h) || x < -1 || x > float64(w) {
		return 0
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
	a, b, c, d := hy*hx*at(yl*w+xl), hy*lx*at(yl*w+xh), ly*hx*at(yh*w+xl), ly*lx*at(yh*w+xh)
	if mx {
		return max(a, b, c, d)
	}
	return a + b + c + d
}
