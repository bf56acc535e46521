package onnx

import (
	_ "embed" // for PTX

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// PTX is the PTX (virtual architecture compute_70) of the operators' CUDA
// kernels, compiled from kernels.cu by `make ptx` (cmd/beamgpu-ptx); the
// GPU executor loads it (Module) when it opens the device, and the launches
// of gpu_*.go name its kernels (every parameter 8 bytes wide; kernels.cu
// documents each). This package stays pure Go: it only carries the bytes.
//
//go:embed kernels.ptx
var PTX []byte

// Module is the operators' kernel module, as the GPU executor loads it.
var Module = gpu.NewModule("transforms/onnx", PTX)

var (
	kCopyStrided  = Module.Kernel("copy_strided")
	kFill         = Module.Kernel("fill")
	kPadMap       = Module.Kernel("pad_map")
	kGather       = Module.Kernel("gather")
	kUnary        = Module.Kernel("unary_f32")
	kClip         = Module.Kernel("clip_f32")
	kBinaryF32    = Module.Kernel("binary_f32")
	kBinaryI64    = Module.Kernel("binary_i64")
	kBinaryI32    = Module.Kernel("binary_i32")
	kEqualBool    = Module.Kernel("equal_u8")
	kWhere        = Module.Kernel("where_any")
	kNot          = Module.Kernel("not_u8")
	kCast         = Module.Kernel("cast")
	kReduce       = Module.Kernel("reduce_f32")
	kSoftmax      = Module.Kernel("softmax_f32")
	kLayerNorm    = Module.Kernel("layernorm_f32")
	kBatchNorm    = Module.Kernel("batchnorm_f32")
	kIm2col       = Module.Kernel("im2col_f32")
	kBiasChannels = Module.Kernel("bias_channels_f32")
	kConvDepth    = Module.Kernel("conv_depthwise_f32")
	kPool         = Module.Kernel("pool_f32")
	kGemmEpilogue = Module.Kernel("gemm_epilogue_f32")
)
