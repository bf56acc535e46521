//go:build !purego

package onnx

import "unsafe"

// The blocked layout's vector loops (plan_layout_amd64.s), where AVX2 is.

//go:noescape
func blockSumAVX2(x *float32, n int, acc *float64)

//go:noescape
func blockScaleAVX2(y, x *float32, n int, s *float32)

//go:noescape
func blockMeanAVX2(y, x *float32, n int, div float64)

// blockWidth is the lanes of the kernels (8 a step, two steps a pixel)
// wherever AVX2 is; a variable for the tests.
var blockWidth = min(simdWidth, 8)

// blockSumVec adds each lane of x's pixels (16 floats each) to acc in
// float64, and reports whether it did (false: no vector kernel).
func blockSumVec(x []float32, acc *[nchwcBlock]float64) bool {
	if blockWidth == 0 || len(x) == 0 {
		return blockWidth != 0
	}
	blockSumAVX2(unsafe.SliceData(x), len(x)/nchwcBlock, &acc[0])
	return true
}

// blockMeanVec writes the means of each lane of x's pixels (16 floats
// each), summed in float64 as blockSumVec sums from zero, divided by
// len(x)/16 and rounded to float32, to y[:16], and reports whether it did
// (false: no vector kernel).
func blockMeanVec(y, x []float32) bool {
	if blockWidth == 0 || len(x) == 0 {
		return false
	}
	_ = y[nchwcBlock-1]
	blockMeanAVX2(unsafe.SliceData(y), unsafe.SliceData(x), len(x)/nchwcBlock, float64(len(x)/nchwcBlock))
	return true
}

// blockScaleVec writes x's pixels times s, lane by lane, to y, and reports
// whether it did (false: no vector kernel).
func blockScaleVec(y, x []float32, s *[nchwcBlock]float32) bool {
	if blockWidth == 0 || len(x) == 0 {
		return blockWidth != 0
	}
	blockScaleAVX2(unsafe.SliceData(y), unsafe.SliceData(x), len(x)/nchwcBlock, &s[0])
	return true
}
