//go:build !amd64 || purego

package onnx

// No vector kernels for Softmax's rows here (other architectures, the
// purego build tag).

// softmaxWidth is the lanes of the vector kernels: none in this build.
var softmaxWidth = 0

func maxVecF32(x []float32) (float32, int) { return 0, 0 }

func scaleVecF32(y []float32, c float32, div bool) int { return 0 }

func softmaxRowsVec(x, y []float32, n int) int { return 0 }

var softmaxRowsWide = false
