//go:build !amd64 || purego

package onnx

// lstmGatesVec: no vector kernel in this build (ops_rnn_amd64.go).
func lstmGatesVec(g, c, h []float32, H int) int { return 0 }

// gruGatesVec: no vector kernel in this build (ops_rnn_amd64.go).
func gruGatesVec(hr, x, rbh, h []float32, H int) int { return 0 }
