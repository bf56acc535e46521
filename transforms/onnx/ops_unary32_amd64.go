//go:build !purego

package onnx

import (
	"math"
	"unsafe"
)

// sinCosAVX2 is sinCosVec's kernel (ops_unary32_amd64.s).
//
//go:noescape
func sinCosAVX2(y, x *float32, n int, tab *[17][8]uint32, cos bool) int

// sinCosTab holds sinCosAVX2's constants, each 8 times: sinCos1's, as
// float32 bits, then the integers and masks it uses.
var sinCosTab = func() (t [17][8]uint32) {
	f := []float32{4 / math.Pi, 0.78515625, 2.4187564849853515625e-4, 3.77489497744594108e-8, 8192,
		-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1,
		2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2, 0.5, 1}
	u := []uint32{1, 2, 0x7fffffff, 0x80000000}
	for i := range t {
		v := uint32(0)
		if i < len(f) {
			v = math.Float32bits(f[i])
		} else {
			v = u[i-len(f)]
		}
		for j := range t[i] {
			t[i][j] = v
		}
	}
	return t
}()

// sinCosVec writes sinCos1's values of x to y for a prefix of x in whole
// vectors and returns its length (0 without a vector kernel): it stops at
// the first vector with a value not below 8192 in magnitude, or NaN.
func sinCosVec(y, x []float32, cos bool) int {
	if simdWidth < 8 || len(x) < 8 {
		return 0
	}
	_ = y[len(x)-1]
	return sinCosAVX2(unsafe.SliceData(y), unsafe.SliceData(x), len(x), &sinCosTab, cos)
}

// eluAVX2 is eluVec's kernel (ops_unary32_amd64.s): n a multiple of 8.
//
//go:noescape
func eluAVX2(y, x *float32, n int, alpha, scale float32, celu bool, tab *[19][8]float32)

// eluTab holds eluAVX2's constants, each 8 times: expTab's (expf's, so
// that the two cannot drift apart), then expm1Block32's last coefficient
// and its bound.
var eluTab = func() (t [19][8]float32) {
	copy(t[:], expTab[:])
	for j := range t[17] {
		t[17][j], t[18][j] = 1.0/40320, -0.35
	}
	return t
}()

// eluVec writes unaryBlock32's Selu (celu false; alpha and scale its
// attributes) or Celu (alpha its attribute) of x to y for the whole
// vectors of x, the same bits (NaN stays NaN), and returns how many (0
// without a vector kernel). len(y) >= len(x); y may be x.
func eluVec(y, x []float32, alpha, scale float32, celu bool) int {
	n := len(x) &^ 7
	if expWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	eluAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n, alpha, scale, celu, &eluTab)
	return n
}
