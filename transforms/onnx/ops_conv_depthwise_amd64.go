//go:build !purego

package onnx

// Conv (opsets 1, 11), depthwise, and MaxPool (1, 8, 10, 11, 12) without
// Indices: the AVX-512 kernels of ops_conv_depthwise.go and ops_pool.go,
// where the CPU has AVX-512.

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The depthwise convolution's AVX-512 kernels (ops_conv_depthwise_amd64.s).
//
//go:noescape
func dwStripeAVX512(y *float32, ldy, rows int, srcs **float32, off, ldx int, w *float32, taps int, bias float32, mask int)

//go:noescape
func dwStripeAVX2(y *float32, ldy, rows int, srcs **float32, off, ldx int, w *float32, taps int, bias float32, mask *int32, full int)

//go:noescape
func deint2AVX512(even, odd, src *float32, rows, pairs, ldd, lds int, idx *int32, lo, hi, out int)

//go:noescape
func mpStripeAVX512(y *float32, ldy, rows int, srcs **float32, off, ldx, taps int, mask int)

// maxRows computes rows x cols outputs y[r*ldy+c] = the maximum over taps t
// of srcs[t][r*ldx+c] (NaN if any is NaN); ok false when there is no vector
// kernel here.
func maxRows(y []float32, ldy, rows, cols int, srcs []*float32, ldx int) (ok bool) {
	if !dwVector {
		return false
	}
	if rows == 0 || len(srcs) == 0 {
		return true
	}
	_ = y[(rows-1)*ldy+cols-1]
	for c0 := 0; c0 < cols; c0 += 16 {
		lanes := min(16, cols-c0)
		mpStripeAVX512(&y[c0], ldy, rows, unsafe.SliceData(srcs), 4*c0, ldx, len(srcs), 1<<lanes-1)
	}
	return true
}

// dwVector says the AVX-512 kernels run here (a variable for the tests).
var dwVector = cpu.X86.HasAVX512F

// dwWidth is the lanes of dwRows's vector kernel (simd_amd64.go); a
// variable for the tests.
var dwWidth = simdWidth

// deintIdx are deint2AVX512's permutations.
var deintIdx = func() (idx [32]int32) {
	for i := range 16 {
		idx[i], idx[16+i] = int32(2*i), int32(2*i+1)
	}
	return idx
}()

// dwRows computes rows x cols outputs y[r*ldy+c] = bias + sum over taps t
// of w[t] * srcs[t][r*ldx+c].
func dwRows(y []float32, ldy, rows, cols int, srcs []*float32, ldx int, w []float32, bias float32) {
	if dwWidth == 0 || rows == 0 || len(srcs) == 0 {
		dwRowsGo(y, ldy, rows, cols, srcs, ldx, w, bias)
		return
	}
	_ = w[len(srcs)-1]
	_ = y[(rows-1)*ldy+cols-1]
	if dwWidth == 8 {
		for c0 := 0; c0 < cols; c0 += 8 {
			lanes := min(8, cols-c0)
			full := 0
			if lanes == 8 {
				full = 1
			}
			dwStripeAVX2(&y[c0], ldy, rows, unsafe.SliceData(srcs), 4*c0, ldx, unsafe.SliceData(w), len(srcs), bias, &laneMask8[8-lanes], full)
		}
		return
	}
	for c0 := 0; c0 < cols; c0 += 16 {
		lanes := min(16, cols-c0)
		dwStripeAVX512(&y[c0], ldy, rows, unsafe.SliceData(srcs), 4*c0, ldx, unsafe.SliceData(w), len(srcs), bias, 1<<lanes-1)
	}
}

// deint2 writes, for each of rows rows, src[r*lds+2i] to even[r*ldd+i]
// and src[r*lds+2i+1] to odd[r*ldd+i], for i < n.
func deint2(even, odd, src []float32, rows, n, ldd, lds int) {
	if rows == 0 || n == 0 {
		return
	}
	_, _, _ = even[(rows-1)*ldd+n-1], odd[(rows-1)*ldd+n-1], src[(rows-1)*lds+2*n-1]
	if !dwVector {
		deint2Go(even, odd, src, rows, n, ldd, lds)
		return
	}
	t := n % 16
	lo, hi := 1<<min(2*t, 16)-1, 1<<max(0, 2*t-16)-1
	deint2AVX512(unsafe.SliceData(even), unsafe.SliceData(odd), unsafe.SliceData(src), rows, n, ldd, lds, &deintIdx[0], lo, hi, 1<<t-1)
}
