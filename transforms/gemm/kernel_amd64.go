//go:build !purego

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The assembly kernels (kernel_amd64.s, written by gen_amd64.go). a and b
// are packed micro-panels of kc steps; c is the tile's first element, rows
// ldc floats apart.
//
//go:noescape
func kernel14x32AVX512(kc int, a, b, c *float32, ldc int, alpha, beta float32, flags int)

//go:noescape
func kernel8x32AVX512(kc int, a, b, c *float32, ldc int, alpha, beta float32, flags int)

//go:noescape
func kernel16x16AVX512(kc int, a, b, c *float32, ldc int, alpha, beta float32, flags int)

//go:noescape
func kernel6x16AVX2(kc int, a, b, c *float32, ldc int, alpha, beta float32, flags int)

//go:noescape
func reluAVX512(x *float32, n int)

//go:noescape
func reluAVX2(x *float32, n int)

// reluWidth is the vector width of ReLU: 16, 8 or 0 (a variable for the
// tests).
var reluWidth = func() int {
	switch {
	case cpu.X86.HasAVX512F:
		return 16
	case cpu.X86.HasAVX2:
		return 8
	}
	return 0
}()

// reluVector applies ReLU to the longest prefix of x the vector kernel
// takes and returns its length.
func reluVector(x []float32) int {
	if reluWidth == 0 {
		return 0
	}
	n := len(x) / reluWidth * reluWidth
	if n == 0 {
		return 0
	}
	if reluWidth == 16 {
		reluAVX512(unsafe.SliceData(x), n)
	} else {
		reluAVX2(unsafe.SliceData(x), n)
	}
	return n
}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kernels = append(kernels, &kernel{
			name: "avx2", mr: 6, nr: 16, kcMax: 384, mc: 1536, nc: 384,
			run: func(kc int, a, b, c []float32, ldc int, alpha, beta float32, flags int) {
				_, _ = a[6*kc-1], b[16*kc-1]
				kernel6x16AVX2(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha, beta, flags)
			},
		})
	}
	// HasAVX512F also checks that the OS saves the AVX-512 registers.
	if cpu.X86.HasAVX512F {
		// The 8-row kernel reads B's panels as the 14-row one packs them:
		// products of few rows (a recurrent step's, a batch of 16) take it
		// where 14-row tiles would be mostly padding (kernel.forRows).
		short := &kernel{
			name: "avx512x8", mr: 8, nr: 32, kcMax: 384, mc: 2016, nc: 384,
			run: func(kc int, a, b, c []float32, ldc int, alpha, beta float32, flags int) {
				_, _ = a[8*kc-1], b[32*kc-1]
				kernel8x32AVX512(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha, beta, flags)
			},
		}
		// The 16-column kernel takes products of few columns (a 16-wide
		// attention head's, 16 keys' scores), which would fill half of
		// each 32-wide tile and be written through the partial tiles' loop.
		narrow := &kernel{
			name: "avx512n16", mr: 16, nr: 16, kcMax: 384, mc: 2016, nc: 384,
			run: func(kc int, a, b, c []float32, ldc int, alpha, beta float32, flags int) {
				_, _ = a[16*kc-1], b[16*kc-1]
				kernel16x16AVX512(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha, beta, flags)
			},
		}
		kernels = append(kernels, short, narrow, &kernel{
			name: "avx512", mr: 14, nr: 32, kcMax: 384, mc: 2016, nc: 384, short: short, narrow: narrow,
			run: func(kc int, a, b, c []float32, ldc int, alpha, beta float32, flags int) {
				_, _ = a[14*kc-1], b[32*kc-1]
				kernel14x32AVX512(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha, beta, flags)
			},
		})
	}
}
