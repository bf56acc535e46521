//go:build !amd64 || purego

package onnx

// No vector kernels here (other architectures, the purego build tag): the
// normalizations' loops run in Go.

func sumVec(v []float32) (float64, int) { return 0, 0 }

func sqDevVec(v []float32, mean float64) (float64, int) { return 0, 0 }

func affineVec(y, x []float32, mean, a, b float64) int { return 0 }

func normRowVec(xs, ys, scale, bias []float32, m, iv float32) int { return 0 }

var layerNormRowsWide = false

func layerNormRowsVec(x, y, scale, bias []float32, n int, eps float64) bool { return false }

// normWidth is the lanes of the vector kernels: none in this build.
var normWidth = 0
