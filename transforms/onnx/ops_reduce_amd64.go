//go:build !purego

package onnx

import "unsafe"

// accF32AVX2 is accF32Vec's kernel (ops_reduce_amd64.s).
//
//go:noescape
func accF32AVX2(acc *float64, x *float32, n int)

// accWidth is the lanes of accF32Vec's kernel: 8 wherever AVX2 is; a
// variable for the tests.
var accWidth = min(simdWidth, 8)

// accF32Vec adds float64(x[i]) to acc[i] over x's whole vectors and
// returns how many (0 without a kernel): the bits of reduceInto's loop.
func accF32Vec(acc []float64, x []float32) int {
	n := len(x) &^ 7
	if accWidth == 0 || n == 0 {
		return 0
	}
	_, _ = acc[n-1], x[n-1]
	accF32AVX2(unsafe.SliceData(acc), unsafe.SliceData(x), n)
	return n
}
