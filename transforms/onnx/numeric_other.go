//go:build !amd64 || purego

package onnx

// expSubF32: no vector kernel in this build (numeric_amd64.go).
func expSubF32(y, x []float32, sub float32) int { return 0 }

var expWidth = 0

// erfVecF32: no vector kernel in this build.
func erfVecF32(y, x []float32) int { return 0 }

// sigmoidVecF32: no vector kernel in this build.
func sigmoidVecF32(y, x []float32) int { return 0 }

// tanhVecF32: no vector kernel in this build.
func tanhVecF32(y, x []float32) int { return 0 }

func geluVecF32(y, x []float32) int { return 0 }

func geluTanhVecF32(y, x []float32) int { return 0 }

// tanhWide: no 16-lane kernel in this build.
var tanhWide = false

// geluErfVecF32: no vector kernel in this build.
func geluErfVecF32(y []float32, g *geluErf) int { return 0 }

// siluVecF32: no vector kernel in this build.
func siluVecF32(y []float32) int { return 0 }
