package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Nearest's rows (a row that reads the same input row as the one before
// copied from it, a row without extrapolated outputs gathered without
// checking for them) equal a plain gather of each output element through
// the axes' tables: shapes enlarged, shrunk and kept on each axis, every
// nearest mode and coordinate transformation, tf_crop_and_resize's
// extrapolated outputs on every axis, and axes of length 1.
func TestResizeNearestMatchesGather(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 40))
	const fill = 0xdead
	for trial := range 300 {
		rs := &resize{mode: rsNearest, coord: r.IntN(ctTFCropAndResize + 1), near: r.IntN(nmSimple + 1), extrapolate: fill}
		rank := 1 + r.IntN(4)
		p := resizePlan{axes: make([]resizeAxis, rank)}
		for a := range p.axes {
			in := 1 + r.IntN(6)
			out := in
			if r.IntN(4) != 0 {
				out = 1 + r.IntN(13)
			}
			ax := resizeAxis{in: in, out: out, scale: float64(out) / float64(in), roiLo: 0, roiHi: 1}
			if rs.coord == ctTFCropAndResize {
				ax.roiLo, ax.roiHi = r.Float64()-0.5, 0.5+r.Float64()
			}
			p.axes[a] = ax
			if ax.out != ax.in || rs.coord == ctTFCropAndResize {
				p.order = append(p.order, a)
			}
		}
		x := make([]uint32, numel(p.outShapeIn()))
		for i := range x {
			x[i] = uint32(i + 1)
		}
		y := make([]uint32, numel(p.outShape()))
		resizeNearest(rs, p, x, y, fill)

		tables := make([]axisTable, rank)
		for a, ax := range p.axes {
			tables[a] = rs.table(ax)
		}
		inSt, outShape := Strides(p.outShapeIn()), p.outShape()
		for i := range y {
			off, ext := 0, false
			for a, rem := rank-1, i; a >= 0; a-- {
				c := rem % outShape[a]
				rem /= outShape[a]
				ext = ext || tables[a].ext[c]
				off += tables[a].idx[c] * inSt[a]
			}
			want := uint32(fill)
			if !ext {
				want = x[off]
			}
			if !assert.Equal(t, want, y[i], "trial %d: shape %v -> %v, coord %d, nearest %d, element %d", trial, p.outShapeIn(), outShape, rs.coord, rs.near, i) {
				break
			}
		}
	}
}

// The two-tap row of linear resizing (the last axis) at each vector
// width gives resizeTaps2's Go loop's bits: products and sum rounded in
// float64, then to float32; rows with NaN and infinities, lengths that are
// and are not whole vectors.
func TestResizeTaps2Widths(t *testing.T) {
	defer func(w int) { resizeWidth = w }(resizeWidth)
	r := rand.New(rand.NewPCG(28, 41))
	for trial := range 500 {
		in, out := 1+r.IntN(40), r.IntN(70)
		row := make([]float32, in)
		for i := range row {
			row[i] = float32(r.NormFloat64() * 100)
			switch r.IntN(50) {
			case 0:
				row[i] = float32(math.NaN())
			case 1:
				row[i] = float32(math.Inf(1 - 2*r.IntN(2)))
			}
		}
		i0, i1, w0, w1 := make([]int32, out), make([]int32, out), make([]float64, out), make([]float64, out)
		for o := range out {
			i0[o], i1[o] = int32(r.IntN(in)), int32(r.IntN(in))
			w0[o] = r.Float64()
			w1[o] = 1 - w0[o]
		}
		want := make([]float32, out)
		resizeTaps2(want, row, i0, i1, w0, w1)
		for _, width := range simdWidths() {
			if width > 8 {
				continue
			}
			resizeWidth = width
			got := make([]float32, out)
			done := resizeTaps2Vec(got, row, i0, i1, w0, w1)
			resizeTaps2(got[done:], row, i0[done:], i1[done:], w0[done:], w1[done:])
			for o := range out {
				assert.Equal(t, math.Float32bits(want[o]), math.Float32bits(got[o]), "trial %d width %d output %d", trial, width, o)
			}
		}
	}
}

// Resizing the last two axes row by row (resizeLastTwo) gives the bits
// of a pass per axis through intermediate arrays: linear and cubic
// (cubic on the last axis is left to the passes), enlarged and shrunk,
// every coordinate transformation with tf_crop_and_resize's extrapolated
// rows and columns, NaN and infinities in the input, float32 and float64.
func TestResizeLastTwoMatchesPasses(t *testing.T) {
	defer func(w int) { resizeWidth = w }(resizeWidth)
	r := rand.New(rand.NewPCG(28, 42))
	fused := 0
	for trial := range 400 {
		rs := &resize{mode: rsLinear + r.IntN(2), coord: r.IntN(ctTFCropAndResize + 1), cubicA: -0.75, extrapolate: -3}
		if trial%3 != 0 {
			rs.mode = rsLinear
		}
		rank := 2 + r.IntN(3)
		p := resizePlan{axes: make([]resizeAxis, rank)}
		for a := range p.axes {
			in := 1 + r.IntN(4)
			ax := resizeAxis{in: in, out: in, scale: 1, roiLo: 0, roiHi: 1}
			if a >= rank-2 {
				in = 1 + r.IntN(20)
				out := 1 + r.IntN(40)
				ax = resizeAxis{in: in, out: out, scale: float64(out) / float64(in), roiLo: 0, roiHi: 1}
				if rs.coord == ctTFCropAndResize {
					ax.roiLo, ax.roiHi = r.Float64()-0.5, 0.5+r.Float64()
				}
				p.order = append(p.order, a)
			}
			p.axes[a] = ax
		}
		if trial%7 == 0 {
			p.order[0], p.order[1] = p.order[1], p.order[0] // not the form: the passes
		}
		x := make([]float32, numel(p.outShapeIn()))
		for i := range x {
			x[i] = float32(r.NormFloat64())
			switch r.IntN(200) {
			case 0:
				x[i] = float32(math.NaN())
			case 1:
				x[i] = float32(math.Inf(1))
			}
		}
		want := make([]float32, numel(p.outShape()))
		resizeByPasses(rs, p, x, want)
		x64 := make([]float64, len(x))
		for i, v := range x {
			x64[i] = float64(v)
		}
		want64 := make([]float64, len(want))
		resizeByPasses(rs, p, x64, want64)
		for _, width := range simdWidths() {
			if width > 8 {
				continue
			}
			resizeWidth = width
			got := make([]float32, len(want))
			if !resizeLastTwo(rs, p, x, got) {
				continue
			}
			fused++
			for i := range want {
				assert.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "trial %d width %d element %d", trial, width, i)
			}
			got64 := make([]float64, len(want))
			resizeLastTwo(rs, p, x64, got64)
			for i := range want64 {
				assert.Equal(t, math.Float64bits(want64[i]), math.Float64bits(got64[i]), "float64: trial %d element %d", trial, i)
			}
		}
	}
	assert.Greater(t, fused, 400, "resizes of the form")
}
