//go:build cuda

package cuda

// The few driver calls gorgonia.org/cu does not wrap: page-locked host memory for
// the staging buffers, the name of a CUresult, and a device address as a C pointer
// (cu/blas takes device matrices as []float32 whose first element's address is the
// device address).

/*
#cgo LDFLAGS: -lcuda
#include <stdint.h>
#include <stdlib.h>
#include <cuda.h>

static CUresult beamgpu_alloc_host(void **p, size_t n) { return cuMemAllocHost(p, n); }
static CUresult beamgpu_free_host(void *p) { return cuMemFreeHost(p); }
static float *beamgpu_f32(uintptr_t p) { return (float *)p; }
static const char *beamgpu_error_name(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == NULL) {
		return "CUDA_ERROR_UNRECOGNIZED";
	}
	return s;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

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

// allocHost allocates n bytes of page-locked host memory (the current context must
// be set).
func allocHost(n int64) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	if err := driverResult(C.beamgpu_alloc_host(&p, C.size_t(n))); err != nil {
		return nil, err
	}
	return p, nil
}

func freeHost(p unsafe.Pointer) error { return driverResult(C.beamgpu_free_host(p)) }

// deviceFloats returns a []float32 of n elements whose first element's address is
// the device address p. It is only for handing device matrices to cu/blas, which
// passes &s[0] to cuBLAS: the slice must never be read or written from Go. (Device
// addresses are reserved in the process's address space by the driver, so they never
// fall inside the Go heap, and the garbage collector ignores them.)
func deviceFloats(p cu.DevicePtr, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(C.beamgpu_f32(C.uintptr_t(p)))), n)
}
