//go:build !amd64 || purego

package onnx

// No vector kernels here (other architectures, the purego build tag): the
// blocked layout's loops run in Go.

func blockSumVec(x []float32, acc *[nchwcBlock]float64) bool { return false }

func blockMeanVec(y, x []float32) bool { return false }

func blockScaleVec(y, x []float32, s *[nchwcBlock]float32) bool { return false }

// blockWidth is 0: no vector loops.
var blockWidth = 0
