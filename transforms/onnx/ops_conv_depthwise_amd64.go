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
func mpStripeAVX2(y *float32, ldy, rows int, srcs **float32, off, ldx, taps int, mask *int32, full int)

//go:noescape
func deint2AVX2(even, odd, src *float32, rows, blocks, ldd, lds int)

//go:noescape
func deint2AVX512(even, odd, src *float32, rows, pairs, ldd, lds int, idx *int32, lo, hi, out int)

//go:noescape
func mpStripeAVX512(y *float32, ldy, rows int, srcs **float32, off, ldx, taps int, mask int)

// maxRows computes rows x cols outputs y[r*ldy+c] = the maximum over taps t
// of srcs[t][r*ldx+c] (NaN if any is NaN); ok false when there is no vector
// kernel here.
func maxRows(y []float32, ldy, rows, cols int, srcs []*float32, ldx int) (ok bool) {
	if dwWidth == 0 {
		return false
	}
	if rows == 0 || len(srcs) == 0 {
		return true
	}
	_ = y[(rows-1)*ldy+cols-1]
	if dwWidth == 8 {
		stripes8(y, ldy, rows, cols, ldx, func(y *float32, rows, off int, mask *int32, full int) {
			mpStripeAVX2(y, ldy, rows, unsafe.SliceData(srcs), off, ldx, len(srcs), mask, full)
		})
		return true
	}
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
		dwRowsAVX2(y, ldy, rows, cols, srcs, ldx, w, bias)
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
		if blocks := n / 8; dwWidth == 8 && blocks > 0 {
			deint2AVX2(unsafe.SliceData(even), unsafe.SliceData(odd), unsafe.SliceData(src), rows, blocks, ldd, lds)
			if done := 8 * blocks; done < n {
				deint2Go(even[done:], odd[done:], src[2*done:], rows, n-done, ldd, lds)
			}
			return
		}
		deint2Go(even, odd, src, rows, n, ldd, lds)
		return
	}
	t := n % 16
	lo, hi := 1<<min(2*t, 16)-1, 1<<max(0, 2*t-16)-1
	deint2AVX512(unsafe.SliceData(even), unsafe.SliceData(odd), unsafe.SliceData(src), rows, n, ldd, lds, &deintIdx[0], lo, hi, 1<<t-1)
}

// dwRowsAVX2 is dwRows on the AVX2 kernel, in stripes8's order.
func dwRowsAVX2(y []float32, ldy, rows, cols int, srcs []*float32, ldx int, w []float32, bias float32) {
	stripes8(y, ldy, rows, cols, ldx, func(y *float32, rows, off int, mask *int32, full int) {
		dwStripeAVX2(y, ldy, rows, unsafe.SliceData(srcs), off, ldx, unsafe.SliceData(w), len(srcs), bias, mask, full)
	})
}

// stripes8 runs an AVX2 stripe kernel over rows x cols outputs (rows ldy
// apart; the sources' rows ldx apart) in stripes of 8 columns, the last
// (cols%8 of them) under a mask: stripe(y, rows, off, mask, full) computes
// rows rows of the stripe at y, its sources off bytes in, storing whole
// vectors where full != 0. A masked store costs several times a plain one
// on AMD's cores, and the small planes of a network's later layers (7 or
// 14 columns) would store every row masked; so where the rows are
// contiguous (ldy == cols) the last stripe goes first and stores whole
// vectors, each row's extra lanes landing on the next row's first
// columns, which that row's own store (the same stripe, or a whole one
// after it) rewrites; only the last row is stored masked. (Rows under 4
// columns store masked: their extra lanes would reach two rows on.)
func stripes8(y []float32, ldy, rows, cols, ldx int, stripe func(y *float32, rows, off int, mask *int32, full int)) {
	if lanes := cols % 8; lanes != 0 {
		c0 := cols - lanes
		mask := &laneMask8[8-lanes]
		if ldy == cols && rows > 1 && 8-lanes <= cols { // the extra lanes within the next row
			stripe(&y[c0], rows-1, 4*c0, mask, 1)
			stripe(&y[(rows-1)*ldy+c0], 1, 4*(c0+(rows-1)*ldx), mask, 0)
		} else {
			stripe(&y[c0], rows, 4*c0, mask, 0)
		}
		cols = c0
	}
	for c0 := 0; c0 < cols; c0 += 8 {
		stripe(&y[c0], rows, 4*c0, &laneMask8[0], 1)
	}
}
