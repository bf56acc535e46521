package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// argExtF32 gives argExt's indices (ArgMax and ArgMin, first and last
// index) on random values with ties and NaNs, at odd sizes.
func TestArgExtF32MatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 11))
	for trial := range 20 {
		outer, n, inner := 1+r.IntN(4), 1+r.IntN(13), 2+r.IntN(17)
		xs := make([]float32, outer*n*inner)
		for i := range xs {
			xs[i] = float32(r.IntN(5)) // ties
			if trial%2 == 1 {
				xs[i] = float32(r.NormFloat64())
			}
			if r.IntN(15) == 0 {
				xs[i] = float32(math.NaN())
			}
		}
		for _, isMin := range []bool{false, true} {
			for _, last := range []bool{false, true} {
				got, want := make([]int64, outer*inner), make([]int64, outer*inner)
				argExtF32(xs, got, outer, n, inner, isMin, last)
				argExt(xs, want, outer, n, inner, isMin, last)
				assert.Equal(t, want, got, "%dx%dx%d min %v last %v", outer, n, inner, isMin, last)
			}
		}
	}
}
