//go:build !purego

package onnx

import "unsafe"

// argStepAVX2 is argStepVec's kernel (ops_argmax_amd64.s).
//
//go:noescape
func argStepAVX2(best *float32, idx *int32, r *float32, n int, j int32, isMin bool) (done int, nan bool)

// argStepVec folds row j, r, into best and idx (first index among ties)
// for a prefix of r in whole vectors and returns its length (0 without a
// vector kernel), and whether that prefix holds a NaN.
func argStepVec(best []float32, idx []int32, r []float32, j int32, isMin bool) (int, bool) {
	if simdWidth < 8 || len(r) < 8 {
		return 0, false
	}
	_, _ = best[len(r)-1], idx[len(r)-1]
	return argStepAVX2(unsafe.SliceData(best), unsafe.SliceData(idx), unsafe.SliceData(r), len(r), j, isMin)
}
