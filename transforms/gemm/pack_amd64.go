//go:build !purego

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// packRowsAVX512 is packRows's kernel (pack_amd64.s).
//
//go:noescape
func packRowsAVX512(dst, src *float32, ldb, steps, lines, w, stride int)

// packRowsVector reports whether packRows has a vector kernel here (AVX-512;
// a variable for the tests).
var packRowsVector = cpu.X86.HasAVX512F

// packRows packs the first steps (rounded down to a multiple of 16) of
// lines rows of x (row r at x[r*ld:]) into a micro-panel of w <= 32 rows,
// dst[p*w+r] = x[r*ld+p], 0 for the rows from lines to w, and returns how
// many steps it packed (0 without a vector kernel). A panel of more than
// 16 rows (B's of the AVX-512 kernels, transposed) is packed as two halves.
func packRows(dst, x []float32, ld, steps, lines, w int) int {
	steps &^= 15
	if !packRowsVector || steps == 0 || w > 32 || lines == 0 {
		return 0
	}
	_, _ = dst[steps*w-1], x[(lines-1)*ld+steps-1]
	lo := min(w, 16)
	packRowsAVX512(unsafe.SliceData(dst), unsafe.SliceData(x), 4*ld, steps, min(lines, lo), lo, w)
	if w > 16 { // the second half: rows 16.., none read where lines <= 16
		hi := max(lines-16, 0)
		src := unsafe.SliceData(x)
		if hi > 0 {
			src = &x[16*ld]
		}
		packRowsAVX512(&dst[16], src, 4*ld, steps, hi, w-16, w)
	}
	return steps
}
