//go:build !purego

package onnx

// Conv (opsets 1, 11) with stride 1: the AVX-512 kernel of
// ops_conv_flat.go, where the CPU has AVX-512.

import "unsafe"

//go:noescape
func flatTileAVX512(out *float32, ldo int, x *float32, plane int, offs *int, taps int, w *float32, chans int, bias *float32)

// flatVector says the shifted-sum kernel runs here.
var flatVector = dwVector

// flatTile computes one tile of flatRows x flatCols outputs: out[r*ldo+j] =
// bias[r] + sum over c < chans, t < len(offs) of
// w[(c*len(offs)+t)*flatRows+r] * x[c*plane+offs[t]+j].
func flatTile(out []float32, ldo int, x []float32, plane int, offs []int, w []float32, chans int, bias []float32) {
	if !flatVector {
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
	flatTileAVX512(unsafe.SliceData(out), ldo, unsafe.SliceData(x), plane, unsafe.SliceData(offs), taps, unsafe.SliceData(w), chans, unsafe.SliceData(bias))
}
