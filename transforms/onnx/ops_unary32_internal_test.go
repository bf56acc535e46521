package onnx

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unaryMore32 gives unaryFunc's float64 values rounded to float32: the
// same bits for Floor, Ceil, Round, ThresholdedRelu and Selu's positive
// side, within 1e-6 (relative above 1) for the others, Softsign the bits
// of its float32 formula; NaN stays NaN; on random values of several
// scales, odd lengths, and the special values; with the vector kernels at
// every width this CPU has, and without them.
func TestUnaryMore32(t *testing.T) {
	savedAct, savedExp := actWidth, expWidth
	defer func() { actWidth, expWidth = savedAct, savedExp }()
	for _, width := range simdWidths() {
		actWidth, expWidth = width, min(width, 8)
		testUnaryMore32(t)
	}
}

func testUnaryMore32(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 32))
	var x []float32
	for _, scale := range []float64{1e-3, 0.5, 3, 30, 1e3, 1e5} {
		for range 1001 {
			x = append(x, float32(scale*r.NormFloat64()))
		}
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 0.5, -0.5, 1.5, -2.5, math.Pi / 4, -math.Pi / 2, math.Pi, 1 << 17, -(1 << 20), 88, -88, 1e30, -1e30,
		math.Inf(1), math.Inf(-1), math.NaN()} {
		x = append(x, float32(v))
	}
	exact := map[unOp]bool{unFloor: true, unCeil: true, unRound: true, unThresholdedRelu: true, unSoftsign: true}
	for _, op := range []unOp{unFloor, unCeil, unRound, unThresholdedRelu, unSoftsign, unSelu, unCelu, unGelu, unGeluTanh, unSoftplus, unMish, unSin, unCos} {
		k := &ewUnary{op: op, alpha: 1, beta: 1}
		switch op {
		case unSelu:
			k.alpha, k.beta = 1.67326319217681884765625, 1.05070102214813232421875
		case unCelu:
			k.alpha = 0.7
		case unThresholdedRelu:
			k.alpha = 0.3
		}
		f := unaryFunc(k)
		y := make([]float32, len(x))
		unaryMore32(k, x, y)
		for i, v := range x {
			want := float32(f(float64(v)))
			if op == unSoftsign {
				want = v / (1 + float32(math.Abs(float64(v))))
			}
			switch {
			case want != want:
				assert.True(t, y[i] != y[i], "op %d of %v: %v, want NaN", op, v, y[i])
			case exact[op] || op == unSelu && v > 0:
				assert.Equal(t, math.Float32bits(want), math.Float32bits(y[i]), "op %d of %v: %v, want %v", op, v, y[i], want)
			default:
				assert.InDelta(t, want, y[i], 1e-6*max(1, math.Abs(float64(want))), "op %d of %v", op, v)
			}
		}
	}
}

// sinCosVec's kernel gives sinCos1's bits, and leaves a vector holding a
// value past 8192 or NaN to Go.
func TestSinCosVec(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 33))
	x := make([]float32, 4003)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
		if r.IntN(2) == 0 {
			x[i] = float32(r.Float64()*16000 - 8000)
		}
	}
	for c, cos := range []bool{false, true} {
		y := make([]float32, len(x))
		n := sinCosVec(y, x, cos)
		if simdWidth < 8 {
			assert.Zero(t, n)
			continue
		}
		assert.Equal(t, len(x)/8*8, n)
		for i := range n {
			assert.Equal(t, math.Float32bits(sinCos1(x[i], uint32(c))), math.Float32bits(y[i]), "cos %v of %v", cos, x[i])
		}
		stop := []float32{1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 9000, 4, 5, 6, 7, 8}
		assert.Equal(t, 8, sinCosVec(make([]float32, 16), stop, cos))
		stop[10] = float32(math.NaN())
		assert.Equal(t, 8, sinCosVec(make([]float32, 16), stop, cos))
	}
}

// eluVec's kernel gives unaryBlock32's bits for Selu and Celu (NaN for
// NaN) on values of several scales, ±0, ±Inf, NaN, huge magnitudes and
// the edges of its cases (expm1's -0.35, expf's -87 and -105), alphas
// above and below 1; without a kernel it does nothing.
func TestEluVec(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 34))
	var x []float32
	for _, scale := range []float64{1e-4, 0.3, 3, 50, 1e4} {
		for range 999 {
			x = append(x, float32(scale*r.NormFloat64()))
		}
	}
	for _, v := range []float64{0, math.Copysign(0, -1), -0.35, -0.3499999, -0.3500001, -87, -87.5, -104.9, -105, -106, 88, 89, 1e30, -1e30,
		math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45, math.Inf(1), math.Inf(-1), math.NaN()} {
		x = append(x, float32(v))
	}
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	saved := expWidth
	defer func() { expWidth = saved }()
	for _, width := range simdWidths() {
		expWidth = min(width, 8)
		for _, k := range []*ewUnary{
			{op: unSelu, alpha: 1.67326319217681884765625, beta: 1.05070102214813232421875},
			{op: unSelu, alpha: 0.5, beta: 3},
			{op: unCelu, alpha: 0.7},
			{op: unCelu, alpha: 1},
			{op: unCelu, alpha: 2.5},
		} {
			y := make([]float32, len(x))
			n := eluVec(y, x, k.alpha, k.beta, k.op == unCelu)
			if expWidth == 0 {
				assert.Zero(t, n)
				continue
			}
			assert.Equal(t, len(x)&^7, n)
			want := make([]float32, len(x))
			blocks32(x, want, func(x, t, y []float32) { unaryBlock32(k, x, t, y) })
			for i := range n {
				if want[i] != want[i] {
					assert.True(t, y[i] != y[i], "%+v of %v: %v, want NaN", *k, x[i], y[i])
					continue
				}
				assert.Equal(t, math.Float32bits(want[i]), math.Float32bits(y[i]), "%+v of %v: %v, want %v", *k, x[i], y[i], want[i])
			}
			// in place, and through unaryMore32 (the rest past the vectors in Go)
			in := slices.Clone(x)
			unaryMore32(k, in, in)
			for i := range in {
				if want[i] == want[i] {
					assert.Equal(t, math.Float32bits(want[i]), math.Float32bits(in[i]), "%+v in place, of %v", *k, x[i])
				}
			}
		}
	}
}

// Gelu's vector kernels (erf's and the tanh form's) give unaryBlock32's
// plain-Go bits on values of several scales, ±0, ±Inf, huge magnitudes
// and NaN; the tanh form's stops before a vector holding a NaN; without a
// kernel they do nothing.
func TestGeluVec(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 35))
	var x []float32
	for _, scale := range []float64{1e-4, 0.3, 3, 50, 1e4} {
		for range 999 {
			x = append(x, float32(scale*r.NormFloat64()))
		}
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 4, -4, 5.6, -5.6, 88, -88, 1e13, -1e13, 1e30, -1e30,
		math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45, math.Inf(1), math.Inf(-1)} {
		x = append(x, float32(v))
	}
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	saved := expWidth
	defer func() { expWidth = saved }()
	for _, op := range []unOp{unGelu, unGeluTanh} {
		k := &ewUnary{op: op}
		expWidth = 0
		want := make([]float32, len(x))
		blocks32(x, want, func(x, t, y []float32) { unaryBlock32(k, x, t, y) })
		for _, width := range simdWidths() {
			expWidth = min(width, 8)
			y := make([]float32, len(x))
			var n int
			if op == unGelu {
				n = geluVecF32(y, x)
			} else {
				n = geluTanhVecF32(y, x)
			}
			if expWidth == 0 {
				assert.Zero(t, n)
				continue
			}
			require.Equal(t, len(x)&^7, n)
			for i := range n {
				if want[i] != want[i] {
					assert.True(t, y[i] != y[i], "op %d of %v: %v, want NaN", op, x[i], y[i])
					continue
				}
				assert.Equal(t, math.Float32bits(want[i]), math.Float32bits(y[i]), "op %d of %v: %v, want %v", op, x[i], y[i], want[i])
			}
			// through unaryMore32, a NaN among the values
			in := slices.Clone(x)
			in[20] = float32(math.NaN())
			unaryMore32(k, in, in)
			for i := range in {
				switch {
				case i == 20:
					assert.True(t, in[i] != in[i], "op %d: NaN gives %v", op, in[i])
				case want[i] == want[i]:
					assert.Equal(t, math.Float32bits(want[i]), math.Float32bits(in[i]), "op %d in place, of %v", op, x[i])
				}
			}
		}
		stop := make([]float32, 24)
		stop[9] = float32(math.NaN())
		if expWidth = min(simdWidth, 8); expWidth > 0 && op == unGeluTanh {
			assert.Equal(t, 8, geluTanhVecF32(make([]float32, 24), stop))
		}
	}
}

// The fused epilogues' GELU (the five operators exporters write, in each
// of their orders) gives the same bits with its vector kernels (AVX-512,
// AVX2) as in Go, NaN, infinities and the ends of erff's pieces among the
// values.
func TestGeluErfVec(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 36))
	var x []float32
	for _, scale := range []float64{1e-4, 0.3, 3, 50, 1e4} {
		for range 999 {
			x = append(x, float32(scale*r.NormFloat64()))
		}
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 4, -4, 5.6, -5.6, 88, -88, 1e30, -1e30,
		math.MaxFloat32, 1e-45, math.Inf(1), math.Inf(-1), math.NaN()} {
		x = append(x, float32(v))
	}
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	savedWidth, savedWide := expWidth, tanhWide
	defer func() { expWidth, tanhWide = savedWidth, savedWide }()
	for mode := range 8 {
		g := &geluErf{div: mode&1 != 0, c: math.Sqrt2, half: 0.5, halfFirst: mode&2 != 0}
		if !g.div {
			g.c = 1 / math.Sqrt2
		}
		x := x[:len(x)-8*(mode/4)] // 16-lane steps and an 8-lane one, and not
		expWidth = 0
		want := slices.Clone(x)
		g.apply(want)
		for _, width := range simdWidths() {
			expWidth, tanhWide = min(width, 8), width == 16
			got := slices.Clone(x)
			g.apply(got)
			for i := range got {
				if want[i] != want[i] {
					assert.True(t, got[i] != got[i], "mode %d of %v: %v, want NaN", mode, x[i], got[i])
					continue
				}
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "mode %d, %d lanes, of %v: %v, want %v", mode, width, x[i], got[i], want[i])
			}
		}
	}
}

// SiLU in place (a fused Conv's or MatMul's activation) gives the same bits
// on its vector kernel as in Go, a NaN among the values (the kernel stops
// before it, Go goes on) and the ends of expf's range.
func TestSiluVec(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 37))
	var x []float32
	for _, scale := range []float64{1e-4, 0.3, 3, 50} {
		for range 333 {
			x = append(x, float32(scale*r.NormFloat64()))
		}
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), 88, -88, 104, -104, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	saved, savedWide := expWidth, tanhWide
	defer func() { expWidth, tanhWide = saved, savedWide }()
	expWidth = 0
	want := slices.Clone(x)
	siluInPlace(want)
	for _, width := range simdWidths() {
		expWidth, tanhWide = min(width, 8), savedWide && width == 16
		got := slices.Clone(x)
		siluInPlace(got)
		for i := range got {
			if want[i] != want[i] {
				require.True(t, got[i] != got[i], "%d lanes, of %v: %v, want NaN", width, x[i], got[i])
				continue
			}
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%d lanes, of %v: %v, want %v", width, x[i], got[i], want[i])
		}
	}
}
