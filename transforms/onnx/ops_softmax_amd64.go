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
