//go:build !amd64 || purego

package onnx

// Conv (opsets 1, 11) with stride 1: without the AVX-512 kernel (other
// architectures, the purego build tag) the shifted-sum path is not taken
// (useFlat); flatTile is its Go form, for the tests.

// flatVector says the shifted-sum kernel runs here: never in this build.
var flatVector = false

// flatTile computes one tile of flatRows x flatCols outputs (flatTileGo).
func flatTile(out []float32, ldo int, x []float32, plane int, offs []int, w []float32, chans int, bias []float32) {
	flatTileGo(out, ldo, x, plane, offs, w, chans, bias)
}

// flatWidth is the lanes of the shifted-sum kernel: none in this build.
var flatWidth = 0
