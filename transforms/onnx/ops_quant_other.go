//go:build !amd64 || purego

package onnx

var quantWidth = 0

// quantizeVec: no vector kernel in this build (ops_quant_amd64.go).
func quantizeVec[Q int8 | uint8](y []Q, x []float32, scale float32, zp, lo, hi int32) int { return 0 }

// minMaxVec: no vector kernel in this build.
func minMaxVec(x []float32) (lo, hi float32, n int, nan bool) { return 0, 0, 0, false }

// requantVec: no vector kernel in this build.
func requantVec[Y int8 | uint8](y []Y, s []int32, bias int32, mult float32, mults []float32, zp, lo, hi int32) int {
	return 0
}

func dequantVec[X int8 | uint8](y []float32, x []X, zp int32, scale float32) int { return 0 }
