//go:build !purego

package onnx

import "unsafe"

// resizeWidth is the vector width of resizeTaps2Vec's kernel: 8 (AVX2) or
// 0 (resizeTaps2's Go loop alone), a variable so that a test runs both.
var resizeWidth = min(simdWidth, 8)

// resizeTaps2AVX2 is resizeTaps2Vec's kernel (ops_resize_amd64.s).
//
//go:noescape
func resizeTaps2AVX2(d, row *float32, i0, i1 *int32, w0, w1 *float64, base, l0, l1 *int32, n int)

// resizeTaps2Vec is resizeTaps2 of float32 through tp for the outputs of
// d in whole vectors; it returns how many it computed (0 without a vector
// kernel). Every index of tp must be within row.
func resizeTaps2Vec(d, row []float32, tp *taps2) int {
	n := len(d) &^ 7
	if resizeWidth < 8 || n == 0 || len(row) == 0 {
		return 0
	}
	_, _, _, _, _, _, _ = tp.i0[n-1], tp.i1[n-1], tp.w0[n-1], tp.w1[n-1], tp.l0[n-1], tp.l1[n-1], tp.base[n/8-1]
	resizeTaps2AVX2(unsafe.SliceData(d), unsafe.SliceData(row), unsafe.SliceData(tp.i0), unsafe.SliceData(tp.i1),
		unsafe.SliceData(tp.w0), unsafe.SliceData(tp.w1), unsafe.SliceData(tp.base), unsafe.SliceData(tp.l0), unsafe.SliceData(tp.l1), n)
	return n
}
