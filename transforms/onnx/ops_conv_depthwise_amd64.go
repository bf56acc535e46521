//go:build !purego

package onnx

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The depthwise convolution's vector kernels (ops_conv_depthwise_amd64.s):
// acc[i] += sum over t < taps of w[t] * srcs[t][i], for i < n (a multiple
// of 16).
//
//go:noescape
func dwAccAVX512(acc *float32, n int, srcs **float32, w *float32, taps int)

//go:noescape
func dwAccAVX2(acc *float32, n int, srcs **float32, w *float32, taps int)

// dwWidth is the vector kernel's width: 16 (AVX-512), 8 (AVX2 and FMA) or
// 0 (none: Go).
var dwWidth = func() int {
	switch {
	case cpu.X86.HasAVX512F:
		return 16
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return 8
	}
	return 0
}()

// dwAccumulate is acc[i] += sum over taps t of w[t] * srcs[t][i], for i <
// len(acc) rounded up to a multiple of dwSlack: acc and every srcs[t] must
// have that many floats.
func dwAccumulate(acc []float32, srcs []*float32, w []float32) {
	if len(srcs) == 0 {
		return
	}
	_ = w[len(srcs)-1]
	n := len(acc) / dwSlack * dwSlack
	switch dwWidth {
	case 16:
		dwAccAVX512(unsafe.SliceData(acc), n, unsafe.SliceData(srcs), unsafe.SliceData(w), len(srcs))
	case 8:
		dwAccAVX2(unsafe.SliceData(acc), n, unsafe.SliceData(srcs), unsafe.SliceData(w), len(srcs))
	default:
		dwAccumulateGo(acc, srcs, w)
		return
	}
	if n < len(acc) {
		rest := acc[n:]
		for t, p := range srcs {
			src := unsafeFloats(p, len(acc))[n:]
			for i := range rest {
				rest[i] += w[t] * src[i]
			}
		}
	}
}
