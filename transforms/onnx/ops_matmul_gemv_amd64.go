//go:build !purego

package onnx

import "unsafe"

//go:noescape
func dotRowsAVX512(y, w *float32, ldw int, x *float32, k, n int)

// dotRowsVec writes y[j] = Σ w[j*ldw + p] * x[p] for p < k16, j < len(y),
// where k16 = len(x) rounded down to 16, and reports whether it did (false:
// no AVX-512 here).
func dotRowsVec(y, w []float32, ldw int, x []float32) bool {
	k16 := len(x) &^ 15
	if simdWidth < 16 || k16 == 0 || len(y) == 0 {
		return false
	}
	_ = w[(len(y)-1)*ldw+k16-1]
	dotRowsAVX512(unsafe.SliceData(y), unsafe.SliceData(w), ldw, unsafe.SliceData(x), k16, len(y))
	return true
}
