//go:build !purego

package onnx

import (
	"math"
	"unsafe"
)

// Softmax's float32 row loops on AVX2 (ops_softmax_amd64.s).

//go:noescape
func maxAVX2(x *float32, n int) (m float32, nan bool)

//go:noescape
func scaleAVX2(y *float32, n int, c float32, div bool)

//go:noescape
func softmaxRowsAVX512(x, y *float32, rows, n int, tab *[25][16]float32) int

// softmaxRowsWide reports whether softmaxRowsVec has its kernel here
// (AVX-512; a variable for the tests).
var softmaxRowsWide = simdWidth == 16

// softmaxRowsVec computes softmaxRowF32 of x's rows of n values into y's,
// all of them at one call (rows of a few vectors, an attention head's
// scores, spent more on four calls a row than on their values), and
// returns how many rows it did: it stops before the first that holds a
// NaN or whose largest value is infinite (0 without the kernel).
func softmaxRowsVec(x, y []float32, n int) int {
	if !softmaxRowsWide || n == 0 || len(x) < n {
		return 0
	}
	rows := len(x) / n
	_ = y[rows*n-1]
	return softmaxRowsAVX512(unsafe.SliceData(x), unsafe.SliceData(y), rows, n, tanhTab16)
}

// softmaxWidth is the lanes of the kernels (8) wherever AVX2 is; a
// variable for the tests.
var softmaxWidth = min(simdWidth, 8)

// maxVecF32 is the largest of x's whole vectors (NaN where one is NaN) and
// how many values that is (0 without a vector kernel).
func maxVecF32(x []float32) (float32, int) {
	n := len(x) &^ 7
	if softmaxWidth == 0 || n == 0 {
		return 0, 0
	}
	m, nan := maxAVX2(unsafe.SliceData(x), n)
	if nan {
		m = float32(math.NaN())
	}
	return m, n
}

// scaleVecF32 multiplies y's whole vectors by c (div: divides them by c)
// and returns how many values that is (0 without a vector kernel).
func scaleVecF32(y []float32, c float32, div bool) int {
	n := len(y) &^ 7
	if softmaxWidth == 0 || n == 0 {
		return 0
	}
	scaleAVX2(unsafe.SliceData(y), n, c, div)
	return n
}
