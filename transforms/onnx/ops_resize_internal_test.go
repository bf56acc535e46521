package onnx

import (
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
