//go:build cuda

package cuda

// The strided batched product (cublasSgemmStridedBatched), for the batched
// matrix products of a step (MatMul's batch axes, a convolution's images):
// one cuBLAS call instead of one per product.

/*
#include <stdint.h>
#include <cublas_v2.h>

static int beamgpu_sgemm_strided_batched(cublasHandle_t h, int ta, int tb, int m, int n, int k,
                                         uintptr_t a, int lda, long long sa, uintptr_t b, int ldb, long long sb,
                                         uintptr_t c, int ldc, long long sc, int batch) {
	const float one = 1.0f, zero = 0.0f;
	return cublasSgemmStridedBatched(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
	                                 &one, (const float *)a, lda, sa, (const float *)b, ldb, sb,
	                                 &zero, (float *)c, ldc, sc, batch);
}
*/
import "C"

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// sgemmStridedBatched is cublasSgemmStridedBatched with alpha 1, beta 0,
// column-major operands.
func (h blasHandle) sgemmStridedBatched(ta, tb bool, m, n, k int, a gpu.Ptr, lda int, sa int64, b gpu.Ptr, ldb int, sb int64, c gpu.Ptr, ldc int, sc int64, batch int) error {
	return blasResult(C.beamgpu_sgemm_strided_batched(h.h, cbool(ta), cbool(tb), C.int(m), C.int(n), C.int(k),
		C.uintptr_t(a), C.int(lda), C.longlong(sa), C.uintptr_t(b), C.int(ldb), C.longlong(sb),
		C.uintptr_t(c), C.int(ldc), C.longlong(sc), C.int(batch)))
}

// GemmStridedBatched enqueues the row-major products on the lane's cuBLAS
// handle, operands swapped as Gemm's are (C_i^T = op(B_i)^T op(A_i)^T).
func (c *call) GemmStridedBatched(transA, transB bool, m, n, k int, a gpu.Ptr, lda int, strideA int64, b gpu.Ptr, ldb int, strideB int64, cc gpu.Ptr, ldc int, strideC int64, batch int) error {
	for _, v := range []int{m, n, k, lda, ldb, ldc, batch} {
		if v < 1 || v > math.MaxInt32 {
			return fmt.Errorf("cuda: %s: matrix dimension or batch %d out of cuBLAS's range", c.op, v)
		}
	}
	if strideA < 0 || strideB < 0 || strideC < 0 {
		return fmt.Errorf("cuda: %s: negative batch stride (%d, %d, %d)", c.op, strideA, strideB, strideC)
	}
	if err := c.timed(gpu.PhaseKernel, func() error {
		return c.l.blas.sgemmStridedBatched(transB, transA, n, m, k, b, ldb, strideB, a, lda, strideA, cc, ldc, strideC, batch)
	}); err != nil {
		if serr := c.l.stream.Synchronize(); serr != nil {
			return c.d.fail(c.op+": SgemmStridedBatched", serr)
		}
		return classify(c.op+": SgemmStridedBatched", err)
	}
	return nil
}
