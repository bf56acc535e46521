//go:build !purego

package onnx

import "unsafe"

// quantizeAVX2 is quantizeVec's kernel (ops_quant_amd64.s).
//
//go:noescape
func quantizeAVX2(y *byte, x *float32, n int, scale, lo, hi float32, zp int32, signed bool) int

// minMaxAVX2 is minMaxVec's kernel (ops_quant_amd64.s).
//
//go:noescape
func minMaxAVX2(x *float32, n int) (lo, hi float32, nan bool)

// quantWidth is the lanes of the quantization kernels: 8 wherever AVX2 is
// (AVX-512 CPUs run the AVX2 kernels); a variable for the tests.
var quantWidth = min(simdWidth, 8)

// quantizeVec writes quantizeOne(x[i], scale, zp, lo, hi) to y[i] for a
// prefix of x in whole blocks of 32 and returns its length (0 without a
// vector kernel). lo <= zp <= hi are Q's range and its zero point.
func quantizeVec[Q int8 | uint8](y []Q, x []float32, scale float32, zp, lo, hi int32) int {
	if quantWidth == 0 || len(x) < 32 {
		return 0
	}
	_ = y[len(x)-1]
	return quantizeAVX2((*byte)(unsafe.Pointer(unsafe.SliceData(y))), unsafe.SliceData(x), len(x), scale, float32(lo-zp), float32(hi-zp), zp, lo < 0)
}

// minMaxVec returns the least and greatest of a prefix of x in whole
// blocks of 16, its length (0 without a vector kernel: lo and hi are then
// undefined), and whether it holds a NaN.
func minMaxVec(x []float32) (lo, hi float32, n int, nan bool) {
	n = len(x) &^ 15
	if quantWidth == 0 || n == 0 {
		return 0, 0, 0, false
	}
	lo, hi, nan = minMaxAVX2(unsafe.SliceData(x), n)
	return lo, hi, n, nan
}

// requantAVX2 is requantVec's kernel (ops_quant_amd64.s).
//
//go:noescape
func requantAVX2(y *byte, s *int32, n int, bias int32, mults *float32, step int, lo, hi float32, zp int32, signed bool) int

// requantVec writes requantRow's values of the sums s (bias added; mult,
// or mults[i] for s[i] where mults is not nil) to y for a prefix of s in
// whole blocks of 32, and returns its length (0 without a vector kernel).
// lo <= zp <= hi are Y's range and its zero point.
func requantVec[Y int8 | uint8](y []Y, s []int32, bias int32, mult float32, mults []float32, zp, lo, hi int32) int {
	if quantWidth == 0 || len(s) < 32 {
		return 0
	}
	_ = y[len(s)-1]
	var one [32]float32
	m, step := &one[0], 0
	if mults != nil {
		_ = mults[len(s)-1]
		m, step = &mults[0], 1
	} else {
		for i := range one {
			one[i] = mult
		}
	}
	return requantAVX2((*byte)(unsafe.Pointer(unsafe.SliceData(y))), unsafe.SliceData(s), len(s), bias, m, step, float32(lo-zp), float32(hi-zp), zp, lo < 0)
}

// dequantAVX2 is dequantVec's kernel (ops_quant_amd64.s).
//
//go:noescape
func dequantAVX2(y *float32, x *byte, n int, zp int32, scale float32, signed bool)

// dequantVec writes float32(int32(x[i]) - zp) * scale to y[i] for the
// whole vectors of x and returns how many (0 without a vector kernel), the
// same bits as dequantize's loop.
func dequantVec[X int8 | uint8](y []float32, x []X, zp int32, scale float32) int {
	n := len(x) &^ 7
	if quantWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	var z X
	dequantAVX2(unsafe.SliceData(y), (*byte)(unsafe.Pointer(unsafe.SliceData(x))), n, zp, scale, ^z < 0)
	return n
}
