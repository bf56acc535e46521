//go:build !amd64 || purego

package onnx

// dotRowsVec has no vector kernel here: the caller takes its other path.
func dotRowsVec(y, w []float32, ldw int, x []float32) bool { return false }
