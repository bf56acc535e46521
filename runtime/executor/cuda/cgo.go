//go:build cuda

package cuda

// The few driver calls gorgonia.org/cu does not wrap (page-locking host memory the
// executor did not allocate, the name of a CUresult) and cuBLAS, called directly so
// that each lane has its own handle bound to its own stream (gorgonia.org/cu/blas
// cannot set a handle's stream).

/*
#cgo LDFLAGS: -lcuda -lcublas
#include <stdint.h>
#include <stdlib.h>
#include <cuda.h>
#include <cublas_v2.h>

static CUresult beamgpu_host_register(void *p, size_t n) { return cuMemHostRegister(p, n, CU_MEMHOSTREGISTER_PORTABLE); }
static CUresult beamgpu_host_unregister(void *p) { return cuMemHostUnregister(p); }
static const char *beamgpu_error_name(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == NULL) {
		return "CUDA_ERROR_UNRECOGNIZED";
	}
	return s;
}

static int beamgpu_blas_create(cublasHandle_t *h, void *stream) {
	cublasStatus_t st = cublasCreate(h);
	if (st != CUBLAS_STATUS_SUCCESS) {
		return st;
	}
	// Full float32: no TF32 (the products must match the CPU's within float32
	// rounding).
	st = cublasSetMathMode(*h, CUBLAS_DEFAULT_MATH);
	if (st == CUBLAS_STATUS_SUCCESS) {
		st = cublasSetStream(*h, (cudaStream_t)stream);
	}
	if (st != CUBLAS_STATUS_SUCCESS) {
		cublasDestroy(*h);
	}
	return st;
}
static int beamgpu_blas_destroy(cublasHandle_t h) { return cublasDestroy(h); }
static int beamgpu_sgemm(cublasHandle_t h, int ta, int tb, int m, int n, int k,
                         uintptr_t a, int lda, uintptr_t b, int ldb, uintptr_t c, int ldc) {
	const float one = 1.0f, zero = 0.0f;
	return cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
	                   &one, (const float *)a, lda, (const float *)b, ldb, &zero, (float *)c, ldc);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"gorgonia.org/cu"
)

// driverError is a CUresult returned by a driver call made here rather than by cu.
type driverError int

func (e driverError) Error() string {
	return fmt.Sprintf("%s (%d)", C.GoString(C.beamgpu_error_name(C.CUresult(e))), int(e))
}

func driverResult(r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return driverError(r)
}

// CUresult values the error classification needs, from the 11.8 header.
const (
	codeOutOfMemory = int(C.CUDA_ERROR_OUT_OF_MEMORY)
)

// stickyCodes are the CUresults after which the context is unusable (every later
// call fails the same way) or the device is gone: the process must exit and be
// restarted (CUDA driver API documentation of each code; the MPS codes mean the MPS
// server went away or refused this client for good).
var stickyCodes = map[int]bool{
	int(C.CUDA_ERROR_ILLEGAL_ADDRESS):        true,
	int(C.CUDA_ERROR_LAUNCH_TIMEOUT):         true,
	int(C.CUDA_ERROR_HARDWARE_STACK_ERROR):   true,
	int(C.CUDA_ERROR_ILLEGAL_INSTRUCTION):    true,
	int(C.CUDA_ERROR_MISALIGNED_ADDRESS):     true,
	int(C.CUDA_ERROR_INVALID_ADDRESS_SPACE):  true,
	int(C.CUDA_ERROR_INVALID_PC):             true,
	int(C.CUDA_ERROR_LAUNCH_FAILED):          true,
	int(C.CUDA_ERROR_ASSERT):                 true,
	int(C.CUDA_ERROR_ECC_UNCORRECTABLE):      true,
	int(C.CUDA_ERROR_NVLINK_UNCORRECTABLE):   true,
	int(C.CUDA_ERROR_CONTEXT_IS_DESTROYED):   true,
	int(C.CUDA_ERROR_DEINITIALIZED):          true,
	int(C.CUDA_ERROR_NOT_INITIALIZED):        true,
	int(C.CUDA_ERROR_DEVICE_UNAVAILABLE):     true,
	int(C.CUDA_ERROR_EXTERNAL_DEVICE):        true,
	int(C.CUDA_ERROR_MPS_CONNECTION_FAILED):  true,
	int(C.CUDA_ERROR_MPS_RPC_FAILURE):        true,
	int(C.CUDA_ERROR_MPS_SERVER_NOT_READY):   true,
	int(C.CUDA_ERROR_MPS_CLIENT_TERMINATED):  true,
	int(C.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH): true,
	int(C.CUDA_ERROR_UNKNOWN):                true,
}

// hostRegister page-locks n bytes of host memory at p (the context must be current).
func hostRegister(p unsafe.Pointer, n int64) error {
	return driverResult(C.beamgpu_host_register(p, C.size_t(n)))
}

func hostUnregister(p unsafe.Pointer) error { return driverResult(C.beamgpu_host_unregister(p)) }

// blasStatus is a cublasStatus_t.
type blasStatus int

// blasAllocFailed is CUBLAS_STATUS_ALLOC_FAILED: out of memory, not of the batch's making.
const blasAllocFailed = blasStatus(C.CUBLAS_STATUS_ALLOC_FAILED)

func (s blasStatus) Error() string { return fmt.Sprintf("cuBLAS status %d", int(s)) }

func blasResult(st C.int) error {
	if st == C.CUBLAS_STATUS_SUCCESS {
		return nil
	}
	return blasStatus(st)
}

// blasHandle is a cuBLAS handle bound to a stream.
type blasHandle struct{ h C.cublasHandle_t }

// newBlas creates a cuBLAS handle whose work goes on stream s (the context must be
// current).
func newBlas(s cu.Stream) (blasHandle, error) {
	raw := s.C()
	var h blasHandle
	// raw is cu's C.CUstream (another package's cgo type): a pointer, passed on as one.
	err := blasResult(C.beamgpu_blas_create(&h.h, *(*unsafe.Pointer)(unsafe.Pointer(&raw))))
	return h, err
}

func (h blasHandle) destroy() error {
	if h.h == nil {
		return nil
	}
	return blasResult(C.beamgpu_blas_destroy(h.h))
}

// sgemm is cublasSgemm with alpha 1, beta 0, column-major operands.
func (h blasHandle) sgemm(ta, tb bool, m, n, k int, a gpu.Ptr, lda int, b gpu.Ptr, ldb int, c gpu.Ptr, ldc int) error {
	return blasResult(C.beamgpu_sgemm(h.h, cbool(ta), cbool(tb), C.int(m), C.int(n), C.int(k),
		C.uintptr_t(a), C.int(lda), C.uintptr_t(b), C.int(ldb), C.uintptr_t(c), C.int(ldc)))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
