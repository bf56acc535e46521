//go:build !amd64 || purego

package onnx

// resizeWidth: no vector kernel in this build (ops_resize_amd64.go).
var resizeWidth = 0

// resizeTaps2Vec: no vector kernel in this build; resizeTaps2's Go loop
// computes every output.
func resizeTaps2Vec(d, row []float32, tp *taps2) int { return 0 }
