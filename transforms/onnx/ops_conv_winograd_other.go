//go:build !amd64 || purego

package onnx

// Winograd's F(2x2, 3x3) transforms: no vector kernels in this build (the
// path is not taken: useWinograd); winoInGo and winoOutGo for the tests.

func winoInVector(v []float32, xi int, x []float32, ld, k int) bool { return false }

func winoOutVector(y []float32, ld int, m []float32, xi int, bias, z []float32, k int, act *nchwcAct) bool {
	return false
}
