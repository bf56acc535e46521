package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The blocked layout's vector loops give their Go loops' bits, for runs of
// 0 to 40 pixels: per-lane float64 sums added to what acc held, and
// per-lane scales, in place too.
func TestBlockLoopsVectorAndGo(t *testing.T) {
	const B = nchwcBlock
	r := rand.New(rand.NewPCG(75, 76))
	for n := range 41 {
		x := make([]float32, n*B)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
		}
		var want, got [B]float64
		for l := range B {
			want[l] = r.NormFloat64()
			got[l] = want[l]
		}
		for q := range n {
			for l := range B {
				want[l] += float64(x[q*B+l])
			}
		}
		if !blockSumVec(x, &got) {
			t.Skip("no vector kernel here")
		}
		require.Equal(t, want, got, "%d pixels", n)

		var s [B]float32
		for l := range s {
			s[l] = float32(r.NormFloat64())
		}
		wantY := make([]float32, len(x))
		for i := range x {
			wantY[i] = x[i] * s[i%B]
		}
		y := make([]float32, len(x)+B)
		y[len(x)] = 7 // not written past the run
		require.True(t, blockScaleVec(y[:len(x)], x, &s))
		require.Equal(t, wantY, y[:len(x)], "%d pixels", n)
		require.Equal(t, float32(7), y[len(x)])
		require.True(t, blockScaleVec(x, x, &s))
		require.Equal(t, wantY, x, "%d pixels in place", n)
	}
}
