//go:build !purego

package onnx

import "golang.org/x/sys/cpu"

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
