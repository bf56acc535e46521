//go:build !amd64 || purego

package onnx

// prefetchL2 does nothing here (see prefetch_amd64.go).
func prefetchL2(p *float32, lines int) {}
