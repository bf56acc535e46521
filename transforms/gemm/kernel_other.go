//go:build !amd64 || purego

package gemm

// Without the amd64 kernels: the portable micro-kernel and a scalar ReLU.

var reluWidth = 0

func reluVector(x []float32) int { return 0 }

// packRows has no vector kernel in this build.
func packRows(dst, x []float32, ld, steps, lines, w int) int { return 0 }

var packRowsVector = false
