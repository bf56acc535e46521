//go:build !purego

package onnx

import "unsafe"

// nmsWidth is the vector width of nmsSuppressVec's kernel: 8 (AVX2) or 0
// (nmsKept.suppresses' Go loop alone), a variable so that a test runs both.
var nmsWidth = min(simdWidth, 8)

// nmsSuppressAVX2 is nmsSuppressVec's kernel (ops_nms_amd64.s).
//
//go:noescape
func nmsSuppressAVX2(b *nmsBox, planes *float32, stride, n int, iou float32) (done int, hit bool)

// nmsSuppressVec compares box b with the first boxes of planes (nmsKept's
// layout, stride values a plane) in whole vectors: hit reports an IoU
// above iou among them, done how many it compared (0 without a vector
// kernel).
func nmsSuppressVec(b *nmsBox, planes []float32, stride, n int, iou float32) (done int, hit bool) {
	if nmsWidth < 8 || n < 8 {
		return 0, false
	}
	_ = planes[4*stride+n-1]
	return nmsSuppressAVX2(b, unsafe.SliceData(planes), stride, n, iou)
}
