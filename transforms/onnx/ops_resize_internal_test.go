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
			if r.IntN(3) == 0 { // an integer scale, Upsample's: each input repeated (repeats)
				out = in * (2 + r.IntN(2))
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
// float64, then to float32; taps near each other (an enlarged axis: the
// kernel's loads and permutes) and anywhere (its gathers), special outputs
// (extrapolated, a weight 0), rows with NaN and infinities, lengths that
// are and are not whole vectors.
func TestResizeTaps2Widths(t *testing.T) {
	defer func(w int) { resizeWidth = w }(resizeWidth)
	r := rand.New(rand.NewPCG(28, 41))
	permuted, gathered := 0, 0
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
		tab := axisTable{n: 2, idx: make([]int, 2*out), w: make([]float64, 2*out), ext: make([]bool, out)}
		for o := range out {
			i := o * in / max(out, 1)
			tab.idx[2*o], tab.idx[2*o+1] = i, min(i+1, in-1)
			if trial%3 == 0 {
				tab.idx[2*o], tab.idx[2*o+1] = r.IntN(in), r.IntN(in)
			}
			tab.w[2*o] = r.Float64()
			tab.w[2*o+1] = 1 - tab.w[2*o]
			switch r.IntN(20) {
			case 0:
				tab.ext[o] = true
			case 1:
				tab.w[2*o+r.IntN(2)] = 0
			}
		}
		tp := newTaps2(tab, in, out)
		for _, b := range tp.base {
			if b >= 0 {
				permuted++
			} else {
				gathered++
			}
		}
		want := make([]float32, out)
		resizeWidth = 0
		taps2Row(&tp, want, row, -3)
		for _, width := range simdWidths() {
			if width > 8 {
				continue
			}
			resizeWidth = width
			got := make([]float32, out)
			taps2Row(&tp, got, row, -3)
			for o := range out {
				assert.Equal(t, math.Float32bits(want[o]), math.Float32bits(got[o]), "trial %d width %d output %d", trial, width, o)
			}
		}
	}
	assert.Positive(t, permuted)
	assert.Positive(t, gathered)
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
	widths := 0
	for _, w := range simdWidths() {
		if w <= 8 {
			widths++
		}
	}
	assert.Greater(t, fused, 200*widths, "resizes of the form, at %d widths", widths)
}
