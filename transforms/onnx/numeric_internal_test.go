package onnx

import (
	"fmt"
	"math"
	"math/big"
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

// fma32 is a*b + c rounded once to float32, ties to even: math/big's
// exact sum rounded, on random operands, on operands whose exact result
// is a float32 midpoint or a float64 rounding away from one (where a
// product and a sum each rounded, or a float64 fma then rounded again,
// go wrong), and on the polynomials' own operands.
func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(95, 96))
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	check := func(a, b, c float32) {
		want := exact(a, b, c)
		require.Equal(t, math.Float32bits(want), math.Float32bits(fma32(a, b, c)), "fma32(%v, %v, %v)", a, b, c)
	}
	for range 200000 {
		a := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
		b := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
		c := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
		check(a, b, c)
		// c close to -a*b: cancellation, the result's low bits from the product
		check(a, b, -float32(float64(a)*float64(b)))
	}
	// Midpoints: 1 + 2^-24 is halfway between 1 and the next float32; a
	// product of 1 + 2^-12 by itself is 1 + 2^-11 + 2^-24, which plus
	// -2^-11 is that midpoint exactly (ties to even: 1); plus a little
	// more or less it must round up or down.
	u := float32(1 + 0x1p-12)
	check(u, u, -0x1p-11)
	check(u, u, -0x1p-11+0x1p-40)
	check(u, u, -0x1p-11-0x1p-40)
	check(u, -u, 0x1p-11)
	// An exact result a quarter of a float64 ulp off a float32 midpoint:
	// rounded to float64 first it is the midpoint, and ties to even then
	// rounds it the wrong way (a*b = 2^-24 (1 - 2^-30), or its negation).
	lo, hi := float32(0x1p-12*(1+0x1p-15)), float32(0x1p-12*(1-0x1p-15))
	for _, c := range []float32{1 + 0x1p-23, 1 + 3*0x1p-23, 1 + 0x1p-22, 1 + 5*0x1p-23, 3 + 0x1p-22} {
		check(lo, hi, c)
		check(-lo, hi, c)
		check(lo, -hi, -c)
	}
	for range 100000 { // products of 12-bit values: exact sums near midpoints
		a := float32(r.IntN(1<<12)+1<<12) * 0x1p-12
		b := float32(r.IntN(1<<12)+1<<12) * 0x1p-12
		c := float32(r.IntN(1<<24)) * 0x1p-24 * float32(r.IntN(3)-1)
		check(a, b, c)
		check(a, b, c+float32(math.Ldexp(1, -30-r.IntN(20))))
	}
}

// Sigmoid's and SiLU's vector kernels write sigmoidf's bits (and x times
// them) across float32's range: a value of every exponent and sign (every
// 4099th bit pattern), and the edges of expf's clamp and of its
// subnormal results, where AVX-512's kernel scales (VSCALEFPS) and clamps
// in place of expf's steps.
func TestSigmoidVecEveryExponent(t *testing.T) {
	x := []float32{-105, math.Nextafter32(-105, 0), math.Nextafter32(-105, -200), -87, -87.33654, -103.27893, -103.97208, -104.5,
		87, 87.33654, 105, 1e-45, -1e-45, math.MaxFloat32, -math.MaxFloat32}
	for b := uint64(0); b < 1<<32; b += 4099 {
		if v := math.Float32frombits(uint32(b)); v == v {
			x = append(x, v)
		}
	}
	for len(x)%16 != 0 {
		x = append(x, 1)
	}
	y := make([]float32, len(x))
	n := sigmoidVecF32(y, x)
	if n == 0 {
		t.Skip("no vector kernel on this CPU")
	}
	require.Equal(t, len(x), n, "no NaN: every vector")
	for i, v := range x { // testify's Equal at each would take seconds
		if want := sigmoidf(v); math.Float32bits(want) != math.Float32bits(y[i]) {
			require.Equal(t, want, y[i], "sigmoid(%v)", v)
		}
	}
	copy(y, x)
	require.Equal(t, len(x), siluVecF32(y))
	for i, v := range x {
		if want := v * sigmoidf(v); math.Float32bits(want) != math.Float32bits(y[i]) {
			require.Equal(t, want, y[i], "silu(%v)", v)
		}
	}
}
