//go:build !purego

package onnx

import "unsafe"

// lstmGatesAVX2 is lstmGatesVec's kernel (ops_rnn_amd64.s): units 0..n of
// a row, n a multiple of 8.
//
//go:noescape
func lstmGatesAVX2(gates, c, h *float32, hidden, n int, tab *[17][8]float32)

// lstmGatesVec computes lstmGates' row (g: 4H sums, c and h: H) for its
// first units in whole vectors and returns how many (0 without a vector
// kernel): lstmGate1's bits, as sigmoidAVX2 gives sigmoidf's (NaN stays
// NaN).
func lstmGatesVec(g, c, h []float32, H int) int {
	n := H &^ 7
	if expWidth == 0 || n == 0 {
		return 0
	}
	_, _, _ = g[3*H+n-1], c[n-1], h[n-1]
	lstmGatesAVX2(unsafe.SliceData(g), unsafe.SliceData(c), unsafe.SliceData(h), H, n, &expTab)
	return n
}

// gruGatesAVX2 is gruGatesVec's kernel (ops_rnn_amd64.s): units 0..n of a
// row, n a multiple of 8.
//
//go:noescape
func gruGatesAVX2(hr, x, rbh, h *float32, hidden, n int, tab *[17][8]float32)

// gruGatesVec computes gruStep's row (hr and x: 3H, rbh and h: H) for
// its first units in whole vectors and returns how many (0 without a
// vector kernel): gruGate1's bits (NaN stays NaN).
func gruGatesVec(hr, x, rbh, h []float32, H int) int {
	n := H &^ 7
	if expWidth == 0 || n == 0 {
		return 0
	}
	_, _, _, _ = hr[2*H+n-1], x[2*H+n-1], rbh[n-1], h[n-1]
	gruGatesAVX2(unsafe.SliceData(hr), unsafe.SliceData(x), unsafe.SliceData(rbh), unsafe.SliceData(h), H, n, &expTab)
	return n
}
