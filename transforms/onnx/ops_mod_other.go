//go:build !amd64 || purego

package onnx

// No vector kernel here (other architectures, the purego build tag): Mod's
// fmod runs in Go.

func fmodVec(z, x, y []float32) int { return 0 }

// modWidth is the lanes of the vector kernel: none in this build.
var modWidth = 0
