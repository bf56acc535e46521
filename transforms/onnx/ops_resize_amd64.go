//go:build !purego

package onnx

import "unsafe"

// resizeWidth is the vector width of resizeTaps2Vec's kernel: 8 (AVX2) or
// 0 (resizeTaps2's Go loop alone), a variable so that a test runs both.
var resizeWidth = min(simdWidth, 8)

// resizeTaps2AVX2 is resizeTaps2Vec's kernel (ops_resize_amd64.s).
//
//go:noescape
func resizeTaps2AVX2(d, row *float32, i0, i1 *int32, w0, w1 *float64, n int)

// resizeTaps2Vec is resizeTaps2 of float32 for the outputs of d in whole
// vectors; it returns how many it computed (0 without a vector kernel).
// Every index must be within row.
func resizeTaps2Vec(d, row []float32, i0, i1 []int32, w0, w1 []float64) int {
	n := len(d) &^ 7
	if resizeWidth < 8 || n == 0 || len(row) == 0 {
		return 0
	}
	_, _, _, _ = i0[n-1], i1[n-1], w0[n-1], w1[n-1]
	resizeTaps2AVX2(unsafe.SliceData(d), unsafe.SliceData(row), unsafe.SliceData(i0), unsafe.SliceData(i1), unsafe.SliceData(w0), unsafe.SliceData(w1), n)
	return n
}
