//go:build !amd64 || purego

package onnx

var igWidth = 0

// igemmTile: the plain Go loop in this build (ops_quant_igemm_amd64.go).
func igemmTile(a, b []int16, c []int32, kp, ldc int, acc bool) { igemmTileGo(a, b, c, kp, ldc, acc) }

// igPairs: the plain Go loop in this build.
func igPairs(dst, r0, r1 []int16, panels, stride int) { igPairsGo(dst, r0, r1, panels, stride) }
