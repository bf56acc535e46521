package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fmod32 is math.Mod bit for bit: random values of many scales, multiples
// of the divisor and their neighbours, signed zeros, NaN, ±Inf and 0
// divisors.
func TestFmod32(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 10))
	var pairs [][2]float32
	for range 200000 {
		x := float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-4)))
		y := float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(8)-4)))
		pairs = append(pairs, [2]float32{x, y})
		k := float32(r.IntN(1 << 20))
		m := k * y
		pairs = append(pairs, [2]float32{m, y}, [2]float32{math.Nextafter32(m, 0), y}, [2]float32{math.Nextafter32(m, float32(math.Inf(1))), y}, [2]float32{-m, y})
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 1, -1, 5.5, -7.25, 3e38, -3e38, 1e-45, inf, -inf, nan} {
		for _, y := range []float32{0, float32(math.Copysign(0, -1)), 1, -2, 0.1, 3e38, 1e-45, inf, -inf, nan} {
			pairs = append(pairs, [2]float32{x, y})
		}
	}
	bad := 0
	for _, p := range pairs {
		got, want := fmod32(p[0], p[1]), float32(math.Mod(float64(p[0]), float64(p[1])))
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			if bad++; bad < 10 {
				t.Errorf("fmod32(%v, %v) = %v, math.Mod gives %v", p[0], p[1], got, want)
			}
		}
	}
	assert.Zero(t, bad, "of %d pairs", len(pairs))

	// fmodF32 (the vector kernel where there is one) gives fmod32's bits.
	x, y := make([]float32, len(pairs)), make([]float32, len(pairs))
	for i, p := range pairs {
		x[i], y[i] = p[0], p[1]
	}
	saved := modWidth
	defer func() { modWidth = saved }()
	for _, width := range simdWidths() {
		modWidth = min(width, 4)
		z := make([]float32, len(x)-1) // an odd length
		fmodF32(z, x, y)
		bad = 0
		for i := range z {
			want := fmod32(x[i], y[i])
			if math.Float32bits(z[i]) != math.Float32bits(want) && !(z[i] != z[i] && want != want) {
				if bad++; bad < 10 {
					t.Errorf("width %d: fmodF32 of %v, %v gives %v, fmod32 %v", width, x[i], y[i], z[i], want)
				}
			}
		}
		assert.Zero(t, bad, "width %d", width)
		if modWidth > 0 {
			assert.Equal(t, 4, fmodVec(z, []float32{1, 2, 3, 4, 5, 6, 7, 8}, []float32{1, 1, 1, 1, 1, 0, 1, 1}), "y 0 stops the kernel")
		}
	}
}
