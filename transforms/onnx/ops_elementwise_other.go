//go:build !amd64 || purego

package onnx

// No vector kernel for the elementwise arithmetic here (other
// architectures, the purego build tag).

var arithWidth = 0

func arithVecF32(op ewOp, x []float32, sx int, y []float32, sy int, z []float32) int { return 0 }
