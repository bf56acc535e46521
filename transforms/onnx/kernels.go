package onnx

import (
	_ "embed" // for PTX

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// PTX is the PTX (virtual architecture compute_70) of the operators' CUDA
// kernels, compiled from kernels.cu by `make ptx` (cmd/beamgpu-ptx); the
// GPU executor loads it (Module) when it opens the device, and each
// operator's launch (its ops_*_gpu.go file) names the kernels it enqueues
// with Module.Kernel (every parameter 8 bytes wide; each kernel is
// documented in its .cu file, which kernels.cu includes). This package
// stays pure Go: it only carries the bytes.
//
//go:embed kernels.ptx
var PTX []byte

// Module is the operators' kernel module, as the GPU executor loads it.
var Module = gpu.NewModule("transforms/onnx", PTX)
