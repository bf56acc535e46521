package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// ReLU gives the scalar loop's bits (NaN, -0, infinities, subnormals) with
// every vector width, on ragged lengths.
func TestReLU(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(-1)), float32(math.Inf(1)), -1e-45, 1e-45}
	widths := []int{0}
	for _, w := range []int{8, 16} {
		if w <= reluWidth {
			widths = append(widths, w)
		}
	}
	defer func(w int) { reluWidth = w }(reluWidth)
	for _, w := range widths {
		reluWidth = w
		for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 100, 1000} {
			x := make([]float32, n)
			for i := range x {
				if r.IntN(5) == 0 {
					x[i] = special[r.IntN(len(special))]
				} else {
					x[i] = float32(r.NormFloat64())
				}
			}
			want := append([]float32(nil), x...)
			for i, v := range want {
				if v < 0 {
					want[i] = 0
				}
			}
			ReLU(x)
			for i := range x {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(x[i]), "width %d, n %d, element %d", w, n, i)
			}
		}
	}
}
