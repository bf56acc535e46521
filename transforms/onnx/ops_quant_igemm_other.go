//go:build !amd64 || purego

package onnx

var igWidth = 0

// ubVNNI: no VNNI kernel in this build.
var ubVNNI = false

// igemmTile: the plain Go loop in this build (ops_quant_igemm_amd64.go).
func igemmTile(a, b []int16, c []int32, kp, ldc int, acc bool) { igemmTileGo(a, b, c, kp, ldc, acc) }

// igPairs: the plain Go loop in this build.
func igPairs(dst, r0, r1 []int16, panels, stride int) { igPairsGo(dst, r0, r1, panels, stride) }

// ubgemmTile: the plain Go loop in this build.
func ubgemmTile(a, b []byte, c []int32, kq, ldc int, init []int32, acc, aSigned bool) {
	ubgemmTileGo(a, b, c, kq, ldc, init, acc, aSigned)
}

// ubQuads: the plain Go loop in this build.
func ubQuads(dst, r0, r1, r2, r3 []byte, panels, stride int) {
	ubQuadsGo(dst, r0, r1, r2, r3, panels, stride)
}

// ubgemmTile2: not called in this build (ubVNNI is false).
func ubgemmTile2(a, b []byte, c []int32, kq, ldc int, init []int32, acc, aSigned bool, astride, bstride int) {
	panic("onnx: ubgemmTile2 without a VNNI kernel")
}
