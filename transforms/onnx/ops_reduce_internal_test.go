package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// ReduceLogSumExp's float32 sums (expf's vector loop, blocksExp32) are the
// float64 loop's within 1e-6 relative, along a row and elementwise, at odd
// lengths, with values past float32's exponential range on both sides.
func TestLogSumExpFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 13))
	for trial := range 12 {
		n := 1 + r.IntN(700)
		x32, x64 := make([]float32, n), make([]float64, n)
		for i := range x32 {
			v := float32(3 * r.NormFloat64())
			switch trial % 3 {
			case 1:
				v += 100 // e^x overflows float32
			case 2:
				v -= 100 // and underflows it
			}
			x32[i], x64[i] = v, float64(v)
		}
		got, want := reduceRow[float32, float64](redLogSumExp, x32, 0.5), reduceRow[float64, float64](redLogSumExp, x64, 0.5)
		assert.InDelta(t, 1, got/want, 1e-6, "row of %d, trial %d", n, trial)
		acc32, acc64 := make([]float64, n), make([]float64, n)
		reduceInto(redLogSumExp, acc32, x32)
		reduceInto(redLogSumExp, acc64, x64)
		for i := range acc64 {
			assert.InDelta(t, 1, acc32[i]/acc64[i], 1e-6, "element %d of %d, trial %d", i, n, trial)
		}
	}
	nan := []float32{1, float32(math.NaN()), 2}
	assert.True(t, math.IsNaN(reduceRow[float32, float64](redLogSumExp, nan, 0)))
}
