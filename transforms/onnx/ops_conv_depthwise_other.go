//go:build !amd64 || purego

package onnx

// dwAccumulate is acc[i] += sum over taps t of w[t] * srcs[t][i], for i <
// len(acc).
func dwAccumulate(acc []float32, srcs []*float32, w []float32) { dwAccumulateGo(acc, srcs, w) }
