//go:build !purego

package onnx

import "unsafe"

// arithAVX2 is arithVecF32's kernel (ops_elementwise_amd64.s).
//
//go:noescape
func arithAVX2(op int, z, x, y *float32, n, mode int)

// arithWidth is the lanes of arithVecF32's kernel: 8 wherever AVX2 is (the
// loops are bound by memory, not by the vectors' width); a variable for
// the tests.
var arithWidth = min(simdWidth, 8)

// arithVecF32 computes z[i] = x[i] op y[i] over z's whole vectors for Add,
// Sub, Mul and Div, x and y of stride sx and sy (1: as long as z; 0: one
// value), and returns how many values it did (0 without a kernel, for
// other operations or two single values): the bits of arith's loops.
func arithVecF32(op ewOp, x []float32, sx int, y []float32, sy int, z []float32) int {
	n := len(z) &^ 7
	if arithWidth == 0 || n == 0 || op > ewDiv {
		return 0
	}
	mode := 0
	switch {
	case sx == 1 && sy == 1:
		_, _ = x[n-1], y[n-1]
	case sx == 1:
		_, _ = x[n-1], y[0]
		mode = 1
	case sy == 1:
		_, _ = x[0], y[n-1]
		mode = 2
	default:
		return 0
	}
	_ = z[n-1]
	arithAVX2(int(op), unsafe.SliceData(z), unsafe.SliceData(x), unsafe.SliceData(y), n, mode)
	return n
}
