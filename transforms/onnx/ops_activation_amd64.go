//go:build !purego

package onnx

import "unsafe"

// The activations' vector kernels (ops_activation_amd64.s).
//
//go:noescape
func clampAVX512(y, x *float32, n int, lo, hi float32)

//go:noescape
func clampAVX2(y, x *float32, n int, lo, hi float32, mask *int32)

//go:noescape
func hardAVX2(y, x *float32, n int, alpha, beta float32, swish int, mask *int32)

// actWidth is the lanes of the activations' vector kernels (simd_amd64.go);
// a variable for the tests.
var actWidth = simdWidth

// clampF32 writes min(max(x[i], lo), hi) to y[i] (len(y) == len(x); NaN
// stays NaN) and reports true, or reports false when there is no vector
// kernel here. lo and hi are not NaN.
func clampF32(y, x []float32, lo, hi float32) bool {
	switch {
	case actWidth == 0:
		return false
	case len(x) == 0:
	case actWidth == 16:
		_ = y[len(x)-1]
		clampAVX512(&y[0], &x[0], len(x), lo, hi)
	default:
		// Whole vectors in the kernel, the rest (under 8) here: a masked
		// store costs several times a plain one on AMD's cores, and a fused
		// Conv clips runs of a few dozen values.
		n := len(x) &^ 7
		if n > 0 {
			_ = y[n-1]
			clampAVX2(&y[0], &x[0], n, lo, hi, &laneMask8[8])
		}
		for i := n; i < len(x); i++ {
			y[i] = min(max(x[i], lo), hi)
		}
	}
	return true
}

// hardF32 writes HardSigmoid's min(max(alpha*x[i] + beta, 0), 1) to y[i],
// or with swish HardSwish's x[i] times that (len(y) == len(x)), the same
// bits as activateFloats, and reports true; false when there is no vector
// kernel here.
func hardF32(y, x []float32, alpha, beta float32, swish bool) bool {
	sw := 0
	if swish {
		sw = 1
	}
	switch {
	case actWidth == 0:
		return false
	case len(x) == 0:
	default: // the AVX2 kernel at width 16 too
		// Whole vectors in the kernel, the rest (under 8) in Go, as in
		// clampF32.
		n := len(x) &^ 7
		if n > 0 {
			_ = y[n-1]
			hardAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n, alpha, beta, sw, &laneMask8[8])
		}
		for i := n; i < len(x); i++ {
			v := x[i]
			t := clamp01(alpha*v + beta)
			if swish {
				t *= v
			}
			y[i] = t
		}
	}
	return true
}

//go:noescape
func softsignAVX2(y, x *float32, n int)

//go:noescape
func threshAVX2(y, x *float32, n int, alpha float32)

// softsignVec writes Softsign's x[i] / (1 + |x[i]|) to y[i] for the whole
// vectors of x and returns how many (0 without a vector kernel); the
// same bits as unaryMore32's loop. len(y) >= len(x); y may be x.
func softsignVec(y, x []float32) int {
	n := len(x) &^ 7
	if actWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	softsignAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n)
	return n
}

// threshVec writes ThresholdedRelu's x[i] (where over alpha or NaN, else
// 0) to y[i] for the whole vectors of x and returns how many (0 without a
// vector kernel). len(y) >= len(x); y may be x.
func threshVec(y, x []float32, alpha float32) int {
	n := len(x) &^ 7
	if actWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	threshAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n, alpha)
	return n
}

//go:noescape
func roundAVX2(y, x *float32, n int, mode int)

// roundVec writes x[i] rounded to an integer to y[i], to the nearest with
// ties to even (mode 0), down (1) or up (2), for the whole vectors of x and
// returns how many (0 without a vector kernel): math's RoundToEven, Floor
// and Ceil, the same bits. len(y) >= len(x); y may be x.
func roundVec(y, x []float32, mode int) int {
	n := len(x) &^ 7
	if actWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	roundAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n, mode)
	return n
}

//go:noescape
func addAVX2(y, z *float32, n int)

// addVec adds z[i] to y[i] for the whole vectors of y and returns how many
// (0 without a vector kernel). len(z) >= len(y).
func addVec(y, z []float32) int {
	n := len(y) &^ 7
	if actWidth == 0 || n == 0 {
		return 0
	}
	_ = z[n-1]
	addAVX2(unsafe.SliceData(y), unsafe.SliceData(z), n)
	return n
}

//go:noescape
func preluAVX2(y, x *float32, n int, s float32)

// preluVec writes PRelu's s x[i] (x[i] < 0) or x[i] to y[i] for the whole
// vectors of x and returns how many (0 without a vector kernel); the bits
// of prelu. len(y) >= len(x).
func preluVec(y, x []float32, s float32) int {
	n := len(x) &^ 7
	if actWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	preluAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n, s)
	return n
}
