//go:build !purego

package onnx

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The vector widths of the assembly kernels (float32 lanes): 16 where the
// CPU has AVX-512 (HasAVX512F also checks that the OS saves its
// registers), 8 where it has AVX2 and FMA (AMD's EPYC before Zen 4, as on
// Dataflow's N2D and C2D machines of earlier generations), 0 elsewhere
// (the kernels' plain Go loops). Each kernel keeps its width in a variable
// of its own, so that a test can run it at every width the CPU has.

// simdWidth is the widest vector this CPU runs.
var simdWidth = simdWidths()[0]

// simdWidths are the widths this CPU runs, widest first, 0 (plain Go) last.
func simdWidths() []int {
	var ws []int
	if cpu.X86.HasAVX512F {
		ws = append(ws, 16)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ws = append(ws, 8)
	}
	return append(ws, 0)
}

// laneMask8 holds 8 all-ones int32s then 8 zeros: &laneMask8[8-n] is the
// AVX2 mask of the first n lanes (VMASKMOVPS reads and writes only those).
var laneMask8 = [16]int32{-1, -1, -1, -1, -1, -1, -1, -1}

// aligned64 returns a copy of t at a 64-byte boundary, for a table whose
// rows of 16 float32s the AVX-512 kernels load whole: a global's address is
// the linker's (32-byte aligned), and a row across two cache lines costs
// each load twice. A build whose tables' addresses moved by 32 bytes (a
// global added elsewhere in the package) ran Sigmoid on 1M values 20-30%
// slower (BenchmarkUnary/Sigmoid, 0.51-0.71 ms -> 0.73-0.86), SiLU's
// convolutions in efficientnet_b0 10%.
func aligned64[T any](t T) *T {
	size := unsafe.Sizeof(t)
	buf := make([]byte, size+63)
	off := (64 - uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%64) % 64
	p := (*T)(unsafe.Pointer(&buf[off]))
	*p = t
	return p
}
