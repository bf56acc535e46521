//go:build !amd64 || purego

package onnx

// clampF32 has no vector kernel here (other architectures, the purego
// build tag): Clip runs in Go.
func clampF32(y, x []float32, lo, hi float32) bool { return false }

// clampVector says the vector kernel runs here: never in this build.
var clampVector = false
