//go:build !purego

package onnx

// Winograd's F(2x2, 3x3) transforms (ops_conv_winograd.go) on AVX-512
// (ops_conv_winograd_amd64.s), where the CPU has it.

import "unsafe"

//go:noescape
func winoInAVX512(v *float32, xi int, x *float32, ld int, k int)

//go:noescape
func winoOutAVX512(y *float32, ld int, m *float32, xi int, bias *float32, z *float32, k int, act *nchwcAct)

// winoInVector runs winoIn (bounds checked by the caller) on AVX-512 and
// reports whether it did.
func winoInVector(v []float32, xi int, x []float32, ld, k int) bool {
	if nchwcWidth != 16 || k < 1 {
		return false
	}
	winoInAVX512(unsafe.SliceData(v), 4*xi, unsafe.SliceData(x), 4*ld, k)
	return true
}

// winoOutVector runs winoOut (bounds checked by the caller) on AVX-512
// and reports whether it did.
func winoOutVector(y []float32, ld int, m []float32, xi int, bias, z []float32, k int, act *nchwcAct) bool {
	if nchwcWidth != 16 || k < 1 || act.swish {
		return false
	}
	winoOutAVX512(unsafe.SliceData(y), 4*ld, unsafe.SliceData(m), 4*xi, unsafe.SliceData(bias), unsafe.SliceData(z), k, act)
	return true
}
