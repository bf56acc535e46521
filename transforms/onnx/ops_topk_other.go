//go:build !amd64 || purego

package onnx

// topKWidth: no vector kernel in this build (ops_topk_amd64.go).
var topKWidth = 0

// topKScanVec: no vector kernel in this build; topKScan's Go loop scans
// the whole row.
func topKScanVec(row []float32, thr float32, smallest bool) int { return 0 }
