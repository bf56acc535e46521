package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// unaryMore32 gives unaryFunc's float64 values rounded to float32: the
// same bits for Floor, Ceil, Round, ThresholdedRelu, Softsign and Selu's
// positive side, within 1e-6 (relative above 1) for the others; NaN stays
// NaN; on random values of several scales, odd lengths, and the special
// values.
func TestUnaryMore32(t *testing.T) {
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
