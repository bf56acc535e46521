//go:build !amd64 || purego

package onnx

// argStepVec: no vector kernel in this build (ops_argmax_amd64.go).
func argStepVec(best []float32, idx []int32, r []float32, j int32, isMin bool) (int, bool) {
	return 0, false
}
