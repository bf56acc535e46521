package tensor

import (
	_ "embed" // for PTX

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// PTX is the PTX (virtual architecture compute_70) of the tensor steps' CUDA kernels,
// compiled from kernels.cu by `make ptx` (cmd/beamgpu-ptx); the GPU executor loads
// it (Module) when it opens the device, and the launches of launch_cuda.go name its
// kernels and do the matrix products with cuBLAS. This package stays pure Go: it only
// carries the bytes.
//
// Kernels (every parameter is 8 bytes wide: a device pointer, a long long or a
// double; matrices are row-major):
//
//	standardize_unit(const float *x, float *y, i64 n)                  y = x / 255
//	standardize_zscore(const float *x, float *y, i64 rows, i64 cols, const float *mean, const float *std)
//	    y[r,c] = (x[r,c] - mean[c]) / std[c]
//	bias_relu(float *y, const float *bias, i64 rows, i64 cols, i64 relu)
//	    y[r,c] += bias[c], then max(y, 0) if relu != 0 (after the Sgemm y = x W)
//	softmax_rows(const float *x, float *y, i64 rows, i64 cols)        stable, sums in double
//	argmax_rows(const float *x, i32 *out, i64 rows, i64 cols)
//	    ties: lowest index; NaN never wins; a row of NaNs gives 0
//	row_sqnorms(const float *x, float *out, i64 rows, i64 cols)       squared norms, in double
//	knn_finish(const float *dots, const float *qn, const float *rn, i64 nq, i64 nref, i64 k,
//	           i32 *idx, float *dist)
//	    from dots (nq x nref, the Sgemm q r^T) and the squared norms: the k <= 32
//	    nearest references of each query, distance max(0, qn+rn-2dot), ties to the
//	    lower reference index; idx and dist are nq x k, nearest first
//
// Launch: standardize_* and bias_relu 1-D with 256 threads per block and any number
// of blocks (grid-stride loops); softmax_rows, argmax_rows and row_sqnorms one warp
// per row, 256 threads (8 rows) per block, ceil(rows/8) blocks; knn_finish one block
// of 256 threads per query, nq blocks.
//
//go:embed kernels.ptx
var PTX []byte

// Module is the tensor kernels' module, as the GPU executor loads it.
var Module = gpu.NewModule("transforms/tensor", PTX)
