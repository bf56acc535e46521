package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// ReduceSum's and ReduceMean's float64 accumulators over float32 values
// on the vector kernel (accF32Vec) are reduceInto's Go loop's bit for bit,
// on lengths around the vector's, with NaN and infinities among the values.
func TestAccF32VecEqualsGo(t *testing.T) {
	r := rand.New(rand.NewPCG(99, 100))
	saved := accWidth
	defer func() { accWidth = saved }()
	for _, n := range []int{1, 7, 8, 9, 16, 23, 40, 1001} {
		x := make([]float32, n)
		acc := make([]float64, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(10)-5)))
			acc[i] = r.NormFloat64() * 1e3
		}
		x[r.IntN(n)] = float32(math.NaN())
		x[r.IntN(n)] = float32(math.Inf(-1))
		for _, op := range []redOp{redSum, redMean} {
			want := append([]float64(nil), acc...)
			accWidth = 0
			reduceInto(op, want, x)
			accWidth = saved
			got := append([]float64(nil), acc...)
			reduceInto(op, got, x)
			for i := range want {
				require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "n %d op %d: element %d", n, op, i)
			}
			require.Equal(t, saved != 0 && n >= 8, accF32Vec(append([]float64(nil), acc...), x) > 0, "n %d: on the kernel?", n)
		}
	}
}
