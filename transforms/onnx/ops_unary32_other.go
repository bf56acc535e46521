//go:build !amd64 || purego

package onnx

// sinCosVec: no vector kernel in this build (ops_unary32_amd64.go).
func sinCosVec(y, x []float32, cos bool) int { return 0 }

// eluVec: no vector kernel in this build (ops_unary32_amd64.go).
func eluVec(y, x []float32, alpha, scale float32, celu bool) int { return 0 }
