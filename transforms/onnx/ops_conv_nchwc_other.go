//go:build !amd64 || purego

package onnx

// Conv (opsets 1, 11) in the blocked layout: without the vector kernels
// (other architectures, the purego build tag) the blocked path is not
// taken (useNCHWc); nchwcTileGo is its Go form, for the tests.

// nchwcWidth is the lanes of the blocked kernels: none in this build.
var nchwcWidth = 0

// nchwcVector reports that no kernel runs nchwcTile here.
func nchwcVector(y []float32, ldy int, x []float32, xs, cbStride, cbs, kh, kw, rowStep, colStep int, w, bias []float32, fbg, np int, acc bool, bi int, z []float32, act *nchwcAct) bool {
	return false
}

// transpose16Vector reports that no kernel transposes here.
func transpose16Vector(dst []float32, ldd int, src []float32, lds int) bool { return false }

// nchwcDwVector reports that no kernel runs nchwcDwTile here.
func nchwcDwVector(y, x []float32, xs, kh, kw, rowStep, colStep int, w, bias []float32, np int, act *nchwcAct) bool {
	return false
}
