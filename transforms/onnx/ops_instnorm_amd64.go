//go:build !purego

package onnx

import "unsafe"

// The normalizations' vector loops (ops_instnorm_amd64.s).

//go:noescape
func sumAVX2(v *float32, n int) float64

//go:noescape
func sqDevAVX2(v *float32, n int, mean float64) float64

//go:noescape
func affineAVX2(y, x *float32, n int, mean, a, b float64)

//go:noescape
func normRowAVX2(y, x, scale, bias *float32, n int, m, iv float32)

//go:noescape
func layerNormRowsAVX512(x, y, scale, bias *float32, rows, n int, eps float64)

// layerNormRowsWide reports whether layerNormRowsVec has its kernel here
// (AVX-512; a variable for the tests).
var layerNormRowsWide = simdWidth == 16

// layerNormRowsVec computes layerNormRowsF32 of x's rows of n values
// into y's (scale and bias of n; bias nil: none), all at one call (rows of
// a few vectors, a small transformer's, spent more on the three calls a
// row than on their values), and reports whether it did (false without
// the kernel): the same bits.
func layerNormRowsVec(x, y, scale, bias []float32, n int, eps float64) bool {
	rows := len(x) / max(n, 1)
	if !layerNormRowsWide || n == 0 || rows == 0 {
		return false
	}
	_, _, _ = y[rows*n-1], x[rows*n-1], scale[n-1]
	var b *float32
	if bias != nil {
		b = unsafe.SliceData(bias[:n])
	}
	layerNormRowsAVX512(unsafe.SliceData(x), unsafe.SliceData(y), unsafe.SliceData(scale), b, rows, n, eps)
	return true
}

// normRowVec computes normRow's float32 values for x's whole vectors and
// returns how many (0 without a vector kernel): the same bits.
func normRowVec(xs, ys, scale, bias []float32, m, iv float32) int {
	n := len(xs) &^ 7
	if normWidth == 0 || n == 0 {
		return 0
	}
	_, _ = ys[n-1], scale[n-1]
	var b *float32
	if bias != nil {
		b = unsafe.SliceData(bias[:n])
	}
	normRowAVX2(unsafe.SliceData(ys), unsafe.SliceData(xs), unsafe.SliceData(scale), b, n, m, iv)
	return n
}

// normWidth is the lanes of the kernels (8 float32s a step) wherever AVX2
// is; a variable for the tests.
var normWidth = min(simdWidth, 8)

// sumVec is Σ v[i] in float64 over v's whole vectors, and how many values
// that is (0 without a vector kernel).
func sumVec(v []float32) (float64, int) {
	n := len(v) &^ 7
	if normWidth == 0 || n == 0 {
		return 0, 0
	}
	return sumAVX2(unsafe.SliceData(v), n), n
}

// sqDevVec is Σ (v[i] - mean)² in float64 over v's whole vectors, and how
// many values that is (0 without a vector kernel).
func sqDevVec(v []float32, mean float64) (float64, int) {
	n := len(v) &^ 7
	if normWidth == 0 || n == 0 {
		return 0, 0
	}
	return sqDevAVX2(unsafe.SliceData(v), n, mean), n
}

// affineVec writes float32((x[i] - mean) a + b) to y[i] for x's whole
// vectors and returns how many (0 without a vector kernel).
func affineVec(y, x []float32, mean, a, b float64) int {
	n := len(x) &^ 7
	if normWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	affineAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n, mean, a, b)
	return n
}
