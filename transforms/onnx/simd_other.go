//go:build !amd64 || purego

package onnx

// No assembly kernels in this build (other architectures, the purego build
// tag): every kernel runs its plain Go loop.

var simdWidth = 0

func simdWidths() []int { return []int{0} }
