//go:build !purego

package onnx

import "golang.org/x/sys/cpu"

// clampAVX512 is Clip's AVX-512 kernel (ops_activation_amd64.s).
//
//go:noescape
func clampAVX512(y, x *float32, n int, lo, hi float32)

// clampVector says the AVX-512 kernel runs here (a variable for the tests).
var clampVector = cpu.X86.HasAVX512F

// clampF32 writes min(max(x[i], lo), hi) to y[i] (len(y) == len(x); NaN
// stays NaN) and reports true, or reports false when there is no vector
// kernel here. lo and hi are not NaN.
func clampF32(y, x []float32, lo, hi float32) bool {
	if !clampVector {
		return false
	}
	if len(x) > 0 {
		_ = y[len(x)-1]
		clampAVX512(&y[0], &x[0], len(x), lo, hi)
	}
	return true
}
