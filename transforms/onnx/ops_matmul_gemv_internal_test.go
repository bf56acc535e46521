package onnx

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// gemvT gives x · W^T times alpha plus beta times y, for k a multiple of
// 16 and not, rows past the kernel's runs of 64 and split between
// goroutines, within float32 rounding of a float64 reference; it declines
// k under 16 (and runs nothing where there is no AVX-512).
func TestGemvT(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	r := rand.New(rand.NewPCG(91, 92))
	require.False(t, gemvT(make([]float32, 3), make([]float32, 15), make([]float32, 45), 1, 0), "k 15: the packed product")
	if simdWidth < 16 {
		require.False(t, gemvT(make([]float32, 3), make([]float32, 16), make([]float32, 48), 1, 0))
		t.Skip("no AVX-512 here")
	}
	for _, c := range []struct {
		k, n        int
		alpha, beta float32
	}{{16, 1, 1, 0}, {64, 3, 1, 0}, {2048, 1000, 1, 1}, {1030, 130, 0.5, 2}, {17, 65, 1, 0}, {576, 1024, -1, 0}} {
		x, w := make([]float32, c.k), make([]float32, c.n*c.k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		y := make([]float32, c.n+1)
		y[c.n] = 7 // not written past n
		want := make([]float64, c.n)
		for j := range c.n {
			y[j] = float32(r.NormFloat64())
			var s float64
			for p := range c.k {
				s += float64(w[j*c.k+p]) * float64(x[p])
			}
			want[j] = float64(c.alpha)*s + float64(c.beta)*float64(y[j])
		}
		require.True(t, gemvT(y[:c.n], x, w, c.alpha, c.beta))
		for j := range c.n {
			require.InDelta(t, want[j], float64(y[j]), 1e-5*float64(c.k), "k %d n %d row %d", c.k, c.n, j)
		}
		require.Equal(t, float32(7), y[c.n])
	}
}
