//go:build !amd64 || purego

package onnx

// No vector kernels here (other architectures, the purego build tag): the
// activations run in Go.

func clampF32(y, x []float32, lo, hi float32) bool { return false }

func hardF32(y, x []float32, alpha, beta float32, swish bool) bool { return false }

// actWidth is the lanes of the vector kernels: none in this build.
var actWidth = 0

func softsignVec(y, x []float32) int { return 0 }

func threshVec(y, x []float32, alpha float32) int { return 0 }

func roundVec(y, x []float32, mode int) int { return 0 }

func addVec(y, z []float32) int { return 0 }

func preluVec(y, x []float32, s float32) int { return 0 }
