package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// expf's vector kernel writes expf's bits (x - sub lane by lane) at every
// width this CPU runs, for every length and offset, across expf's ranges:
// the polynomial's, the two-step scale under -87, 0 under -105, and the
// values it leaves to Go (over 88, infinities, NaN), never past len(x).
func TestExpVectorEqualsGo(t *testing.T) {
	saved := expWidth
	defer func() { expWidth = saved }()
	for _, width := range simdWidths() {
		expWidth = min(width, 8)
		t.Run(fmt.Sprintf("lanes=%d", expWidth), testExpVector)
	}
}

func testExpVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		88, 88.5, -87, -87.00001, -86.99999, -103.9, -104.7, -105, -105.1, 1e-40, -1e-40, -1e30}
	for _, sub := range []float32{0, 3.5, -2} {
		for n := 0; n <= 70; n++ {
			for _, off := range []int{0, 1, 5} {
				buf := make([]float32, off+n+8)
				for i := range buf {
					buf[i] = rng.Float32()*240 - 140 // from under -105 to over 88
					if rng.IntN(10) == 0 {
						buf[i] = special[rng.IntN(len(special))]
					}
				}
				x := buf[off : off+n]
				y := make([]float32, n+8)
				for i := range y {
					y[i] = -7
				}
				expSubInto(y[:n], x, sub)
				for i, v := range x {
					want := expf(v - sub)
					require.Equal(t, math.Float32bits(want), math.Float32bits(y[i]), "n %d off %d sub %v [%d]: expf(%v) = %v, got %v", n, off, sub, i, v-sub, want, y[i])
				}
				for i := n; i < len(y); i++ {
					require.Equal(t, float32(-7), y[i], "n %d: written past the end at %d", n, i)
				}
			}
		}
	}
	// In place, as softmax calls it.
	x := make([]float32, 1000)
	for i := range x {
		x[i] = rng.Float32()*200 - 110
	}
	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = expf(v)
	}
	expSubInto(x, x, 0)
	require.Equal(t, want, x)
}

// erff's vector kernel writes erff's bits at every width this CPU runs,
// across erff's cases (|x| under 1, from 1 to 4, beyond, NaN, ±0, ±Inf),
// for every length and offset, never past len(x).
func TestErfVectorEqualsGo(t *testing.T) {
	saved := expWidth
	defer func() { expWidth = saved }()
	for _, width := range simdWidths() {
		expWidth = min(width, 8)
		t.Run(fmt.Sprintf("lanes=%d", expWidth), testErfVector)
	}
}

func testErfVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		1, -1, 0.99999994, 4, -4, 3.9999998, 2.5, 1e-40, -1e-40, 1e30}
	for n := 0; n <= 70; n++ {
		for _, off := range []int{0, 1, 5} {
			buf := make([]float32, off+n+8)
			for i := range buf {
				buf[i] = rng.Float32()*12 - 6
				if rng.IntN(10) == 0 {
					buf[i] = special[rng.IntN(len(special))]
				}
			}
			x := buf[off : off+n]
			y := make([]float32, n+8)
			for i := range y {
				y[i] = -7
			}
			erfInto(y[:n], x)
			for i, v := range x {
				want := erff(v)
				require.Equal(t, math.Float32bits(want), math.Float32bits(y[i]), "n %d off %d [%d]: erff(%v) = %v, got %v", n, off, i, v, want, y[i])
			}
			for i := n; i < len(y); i++ {
				require.Equal(t, float32(-7), y[i], "n %d: written past the end at %d", n, i)
			}
		}
	}
	// Every float32 of a fine grid over erff's cases.
	x := make([]float32, 0, 1<<16)
	for v := float32(-5); v < 5; v += 1.0 / 4096 {
		x = append(x, v)
	}
	y := make([]float32, len(x))
	erfInto(y, x)
	for i, v := range x {
		require.Equal(t, math.Float32bits(erff(v)), math.Float32bits(y[i]), "erff(%v)", v)
	}
}

// Sigmoid's and Tanh's loops (their vector kernels, and the loops over
// the vector exponential) write sigmoidf's and tanhf's bits, at every width this CPU runs, across their cases
// (tanhf's series under 0.3, its clamp over 10, ±0, ±Inf, NaN), in place
// and not.
func TestSigmoidTanhLoopsEqualGo(t *testing.T) {
	saved, savedWide := expWidth, tanhWide
	defer func() { expWidth, tanhWide = saved, savedWide }()
	rng := rand.New(rand.NewPCG(9, 10))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		0.3, -0.3, 0.29999998, 10, -10, 10.000001, 87, -87, 88.5, -88.5, 104, -104, 1e-40}
	for _, width := range simdWidths() {
		expWidth, tanhWide = min(width, 8), savedWide && width == 16
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 24, 255, 256, 257, 1000} {
			x := make([]float32, n)
			for i := range x {
				x[i] = rng.Float32()*40 - 20
				if rng.IntN(3) == 0 { // around tanhf's series and its edge at 0.3
					x[i] = rng.Float32()*1.2 - 0.6
				}
				if rng.IntN(6) == 0 {
					x[i] = special[rng.IntN(len(special))]
				}
			}
			y := make([]float32, n+1)
			y[n] = -7
			for _, f := range []struct {
				name string
				vec  func(y, x []float32)
				one  func(float32) float32
			}{{"sigmoid", sigmoidInto, sigmoidf}, {"tanh", tanhInto, tanhf}} {
				f.vec(y[:n], x)
				in := append([]float32{}, x...)
				f.vec(in, in)
				for i, v := range x {
					want := math.Float32bits(f.one(v))
					require.Equal(t, want, math.Float32bits(y[i]), "lanes %d %s(%v)", expWidth, f.name, v)
					require.Equal(t, want, math.Float32bits(in[i]), "lanes %d %s(%v) in place", expWidth, f.name, v)
				}
				require.Equal(t, float32(-7), y[n], "written past the end")
			}
		}
	}
}
