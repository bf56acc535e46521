//go:build !purego

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// packRowsAVX512 is packRows's kernel (pack_amd64.s).
//
//go:noescape
func packRowsAVX512(dst, src *float32, ldb, steps, lines, w int)

// packRowsVector reports whether packRows has a vector kernel here (AVX-512;
// a variable for the tests).
var packRowsVector = cpu.X86.HasAVX512F

// packRows packs the first steps (rounded down to a multiple of 16) of
// lines rows of x (row r at x[r*ld:]) into a micro-panel of w <= 16 rows,
// dst[p*w+r] = x[r*ld+p], 0 for the rows from lines to w, and returns how
// many steps it packed (0 without a vector kernel).
func packRows(dst, x []float32, ld, steps, lines, w int) int {
	steps &^= 15
	if !packRowsVector || steps == 0 || w > 16 || lines == 0 {
		return 0
	}
	_, _ = dst[steps*w-1], x[(lines-1)*ld+steps-1]
	packRowsAVX512(unsafe.SliceData(dst), unsafe.SliceData(x), 4*ld, steps, lines, w)
	return steps
}
