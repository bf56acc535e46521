//go:build !purego

package onnx

// Conv (opsets 1, 11) with stride 1 or 2: the AVX-512 and AVX2 kernels of
// ops_conv_flat.go, where the CPU has one.

import "unsafe"

//go:noescape
func flatTileAVX512(out *float32, ldo int, x *float32, plane int, offs *int, taps int, w *float32, chans int, bias *float32)

//go:noescape
func flatQuarterAVX2(out *float32, ldo int, x *float32, plane int, offs *int, taps int, w *float32, chans int, bias *float32)

// flatWidth is the lanes of the shifted-sum kernel (simd_amd64.go): 16
// (one AVX-512 call a tile), 8 (AVX2: four calls a tile, each a quarter) or
// 0 (no kernel: the patches path, flatVector false); a variable for the
// tests.
var flatWidth = simdWidth

// flatVector says the shifted-sum kernel runs here.
var flatVector = flatWidth != 0

// flatTile computes one tile of flatRows x flatCols outputs: out[r*ldo+j] =
// bias[r] + sum over c < chans, t < len(offs) of
// w[(c*len(offs)+t)*flatRows+r] * x[c*plane+offs[t]+j].
func flatTile(out []float32, ldo int, x []float32, plane int, offs []int, w []float32, chans int, bias []float32) {
	if flatWidth == 0 {
		flatTileGo(out, ldo, x, plane, offs, w, chans, bias)
		return
	}
	taps := len(offs)
	if chans < 1 || taps < 1 {
		panic("onnx: flatTile without channels or taps")
	}
	last := 0
	for _, o := range offs {
		if o < 0 {
			panic("onnx: flatTile with a negative offset")
		}
		last = max(last, o)
	}
	_ = out[(flatRows-1)*ldo+flatCols-1]
	_ = x[(chans-1)*plane+last+flatCols-1]
	_ = w[chans*taps*flatRows-1]
	_ = bias[flatRows-1]
	if flatWidth == 16 {
		flatTileAVX512(unsafe.SliceData(out), ldo, unsafe.SliceData(x), plane, unsafe.SliceData(offs), taps, unsafe.SliceData(w), chans, unsafe.SliceData(bias))
		return
	}
	for _, q := range [4][2]int{{0, 0}, {0, 24}, {4, 0}, {4, 24}} { // (first row, first column)
		r0, j0 := q[0], q[1]
		flatQuarterAVX2(&out[r0*ldo+j0], ldo, &x[j0], plane, unsafe.SliceData(offs), taps, &w[r0], chans, &bias[r0])
	}
}
