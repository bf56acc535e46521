// CUDA kernels of the onnx step: the GPU twins of the operators' CPU code (ops_*.go), run
// by the device plan (gpu.go) one node at a time. Matrix products (Gemm, MatMul, the
// convolutions as GEMM) are cuBLAS calls made by the executor; these kernels do the rest.
// kernels.ptx beside this file is generated from it by `make ptx` (cmd/beamgpu-ptx) and
// embedded by kernels.go; `make ptx-check` fails when the two differ.
//
// This file is the module: it includes each operator's kernels from the .cu file named
// like its Go pair (ops_softmax.cu beside ops_softmax.go and ops_softmax_gpu.go, whose
// Launch enqueues them), and kernels.cuh holds what they share. nvcc compiles this file
// alone, from this directory; the includes keep the order the kernels had in one file.
//
// The same source is compiled for the host by the tests (internal/kernelemu, under an
// emulation header), so every kernel here runs through ONNX's conformance tests without a
// GPU. That is why no kernel uses shared memory, __syncthreads or warp shuffles: each
// thread computes its outputs alone (grid-stride loops; one thread per reduced row).
//
// Parameters: every parameter is 8 bytes wide (a pointer, a long long or a double), as
// the executor's launches pass them. Shapes of up to MAXR dimensions are passed as MAXR
// separate long longs (dims, then element strides per operand), so no launch uploads
// metadata; the device plan merges dimensions first (and runs a node of more on the host).
//
// Numerics: built without fast math or FMA contraction (cmd/beamgpu-ptx); transcendental
// functions and reductions are computed in double and rounded, as the CPU code does, so
// results agree with it to float32 rounding (the tests hold them to 1e-4 relative in norm).

#include "kernels.cuh"

#include "gpu_util.cu"

#include "ops_slice.cu"
#include "ops_gather.cu"
#include "ops_math.cu"
#include "ops_activation.cu"
#include "ops_elementwise.cu"
#include "ops_compare.cu"
#include "ops_cast.cu"
#include "ops_reduce.cu"
#include "ops_softmax.cu"
#include "ops_norm.cu"
#include "ops_conv.cu"
#include "ops_pool.cu"
#include "ops_matmul.cu"
#include "ops_resize.cu"
#include "ops_instnorm.cu"
#include "ops_hardmax.cu"
#include "ops_size.cu"
#include "ops_argmax.cu"
#include "ops_cumsum.cu"
#include "ops_trilu.cu"
#include "ops_tile.cu"
#include "ops_topk.cu"
#include "ops_onehot.cu"
#include "ops_gather_nd.cu"
#include "ops_roialign.cu"
#include "ops_quant.cu"
