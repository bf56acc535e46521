//go:build !purego

package onnx

import "unsafe"

// addPairsAVX2 is addPairsVec's kernel (ops_conv_transpose_amd64.s): n a
// multiple of 8.
//
//go:noescape
func addPairsAVX2(d, a, b *float32, n int)

// pairsWidth is the lanes of addPairsAVX2: 8 wherever AVX2 is, 0 without
// (a variable for the tests).
var pairsWidth = min(simdWidth, 8)

// addPairsVec does addPairs for the first whole vectors of 8 pairs and
// returns how many pairs (0 without a vector kernel): the same bits.
func addPairsVec(d, a, b []float32) int {
	n := len(a) &^ 7
	if pairsWidth < 8 || n == 0 {
		return 0
	}
	_, _ = d[2*n-1], b[n-1]
	addPairsAVX2(unsafe.SliceData(d), unsafe.SliceData(a), unsafe.SliceData(b), n)
	return n
}
