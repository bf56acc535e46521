package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
)

// Hardmax's rows along the last axis (the vector maximum) mark the
// plain loop's first maximum: on rows of odd lengths, ties, ±0, NaN
// (skipped; a row all NaN marks its first), ±Inf, at every width this CPU
// has and without a kernel.
func TestHardmaxRows(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 36))
	saved := quantWidth
	defer func() { quantWidth = saved }()
	for _, n := range []int{1, 7, 16, 17, 33, 1000} {
		rows := 40
		x := make([]float32, rows*n)
		for i := range x {
			x[i] = float32(r.IntN(9) - 4) // ties
			if n > 16 {
				x[i] = float32(r.NormFloat64())
			}
		}
		for row := range rows {
			at := func() int { return row*n + r.IntN(n) }
			switch row % 8 {
			case 1:
				x[at()] = float32(math.NaN())
			case 2:
				for j := range n {
					x[row*n+j] = float32(math.NaN())
				}
			case 3:
				for j := range n {
					x[row*n+j] = float32(math.Copysign(0, float64(j%2)-0.5))
				}
			case 4:
				x[at()] = float32(math.Inf(1))
			case 5:
				for j := range n {
					x[row*n+j] = float32(math.Inf(-1))
				}
			case 6:
				x[row*n+n-1] = 100 // in the tail past the vectors
			}
		}
		want := make([]float32, len(x))
		for row := range rows {
			best := -1
			for j := range n {
				v := x[row*n+j]
				if v == v && (best < 0 || v > x[row*n+best]) {
					best = j
				}
			}
			want[row*n+max(best, 0)] = 1
		}
		for _, width := range simdWidths() {
			quantWidth = min(width, 8)
			y := make([]float32, len(x))
			for i := range y {
				y[i] = 7 // every value written
			}
			floats[float32]{}.hardmax(nd.Of(x, rows, n), nd.Of(y, rows, n), rows, n, 1)
			assert.Equal(t, want, y, "n %d, width %d", n, width)
		}
	}
}
