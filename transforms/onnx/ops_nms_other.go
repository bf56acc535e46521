//go:build !amd64 || purego

package onnx

// nmsWidth: no vector kernel in this build (ops_nms_amd64.go).
var nmsWidth = 0

// nmsSuppressVec: no vector kernel in this build; nmsKept.suppresses'
// Go loop compares every box.
func nmsSuppressVec(b *nmsBox, planes []float32, stride, n int, iou float32) (done int, hit bool) {
	return 0, false
}
