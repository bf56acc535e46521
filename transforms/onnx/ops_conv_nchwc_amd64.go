//go:build !purego

package onnx

// Conv (opsets 1, 11) in the blocked layout: the AVX-512 and AVX2 kernels
// of ops_conv_nchwc.go (ops_conv_nchwc_amd64.s, written by
// ops_conv_nchwc_gen.go), where the CPU has one.

import "unsafe"

// nchwcWidth is the lanes of the blocked kernels (simd_amd64.go): 16
// (AVX-512: up to 4 blocks a call), 8 (AVX2: one block a call) or 0 (no
// kernel: useNCHWc is false); a variable for the tests.
var nchwcWidth = simdWidth

// nchwcVector runs nchwcTile (bounds checked by the caller) on the kernel
// of this width and reports whether there was one.
func nchwcVector(y []float32, ldy int, x []float32, xs, cbStride, cbs, kh, kw, rowStep, colStep int, w, bias []float32, fbg, np int, acc bool, bi int, z []float32, act *nchwcAct) bool {
	var k nchwcKernel
	switch {
	case nchwcWidth == 16 && fbg <= 4 && bi == 1:
		k = nchwc512C1[fbg-1][np-1]
	case nchwcWidth == 16 && fbg <= 4:
		k = nchwc512[fbg-1][np-1]
	case nchwcWidth == 8 && fbg == 1 && bi == 1:
		k = nchwc256C1[np-1]
	case nchwcWidth == 8 && fbg == 1:
		k = nchwc256[np-1]
	default:
		return false
	}
	a := 0
	if acc {
		a = 1
	}
	k(unsafe.SliceData(y), 4*ldy, unsafe.SliceData(x), 4*xs, 4*cbStride, cbs, kh, kw, 4*rowStep, 4*colStep, unsafe.SliceData(w), unsafe.SliceData(bias), a, unsafe.SliceData(z), act)
	return true
}

// nchwcDwVector runs nchwcDwTile (bounds checked by the caller) on the
// kernel of this width and reports whether there was one.
func nchwcDwVector(y, x []float32, xs, kh, kw, rowStep, colStep int, w, bias []float32, np int, act *nchwcAct) bool {
	var k nchwcDwKernel
	switch nchwcWidth {
	case 16:
		k = nchwcDw512[np-1]
	case 8:
		k = nchwcDw256[np-1]
	default:
		return false
	}
	k(unsafe.SliceData(y), unsafe.SliceData(x), 4*xs, kh, kw, 4*rowStep, 4*colStep, unsafe.SliceData(w), unsafe.SliceData(bias), act)
	return true
}

// transpose16Vector writes the transpose of the 16 x 16 block at src (rows
// lds floats apart) to dst (rows ldd apart) on this width's kernel and
// reports whether there was one.
func transpose16Vector(dst []float32, ldd int, src []float32, lds int) bool {
	switch nchwcWidth {
	case 16:
		transpose16x16AVX512(unsafe.SliceData(dst), 4*ldd, unsafe.SliceData(src), 4*lds)
	case 8:
		for _, q := range [4][2]int{{0, 0}, {0, 8}, {8, 0}, {8, 8}} {
			transpose8x8AVX2(&dst[q[1]*ldd+q[0]], 4*ldd, &src[q[0]*lds+q[1]], 4*lds)
		}
	default:
		return false
	}
	return true
}
