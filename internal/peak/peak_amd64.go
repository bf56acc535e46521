//go:build !purego

package peak

import "golang.org/x/sys/cpu"

//go:noescape
func fmaAVX512(n int)

//go:noescape
func fmaAVX2(n int)

// fmaLoop is the widest loop this CPU runs, with its floating-point
// operations per iteration: 12 FMAs of 16 or 8 lanes, 2 operations each.
func fmaLoop() (string, float64, func(int)) {
	switch {
	case cpu.X86.HasAVX512F:
		return "avx512", 12 * 16 * 2, fmaAVX512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return "avx2", 12 * 8 * 2, fmaAVX2
	}
	return "go", 8 * 2, goLoop
}
