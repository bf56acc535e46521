//go:build !amd64 || purego

package onnx

// No vector kernel for the reductions' sums here (other architectures,
// the purego build tag).

var accWidth = 0

func accF32Vec(acc []float64, x []float32) int { return 0 }
