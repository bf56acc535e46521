//go:build !purego

package onnx

// prefetchL2 asks the core to bring lines cache lines of 64 bytes from p
// into its L2 (PREFETCHT1): a hint, with no effect on any value.
//
//go:noescape
func prefetchL2(p *float32, lines int)
