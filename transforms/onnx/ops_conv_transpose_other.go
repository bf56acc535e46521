//go:build !amd64 || purego

package onnx

// pairsWidth: no vector kernel in this build (ops_conv_transpose_amd64.go).
var pairsWidth = 0

// addPairsVec: no vector kernel in this build.
func addPairsVec(d, a, b []float32) int { return 0 }
