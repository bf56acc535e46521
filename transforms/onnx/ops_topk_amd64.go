//go:build !purego

package onnx

import "unsafe"

// topKWidth is the vector width of topKScan's kernel: 8 (AVX2) or 0 (the
// plain Go loop), a variable so that a test runs both.
var topKWidth = min(simdWidth, 8)

// topKScanAVX2 is topKScan's kernel (ops_topk_amd64.s).
//
//go:noescape
func topKScanAVX2(row *float32, n int, thr float32, smallest bool) int

// topKScanVec returns the start of the first whole vector of row holding
// an element that may come before thr (topKScan), or where row's whole
// vectors end.
func topKScanVec(row []float32, thr float32, smallest bool) int {
	if topKWidth < 8 || len(row) < 8 {
		return 0
	}
	return topKScanAVX2(unsafe.SliceData(row), len(row), thr, smallest)
}
