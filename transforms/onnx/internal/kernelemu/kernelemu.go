//go:build cgo

// Package kernelemu runs the onnx step's CUDA kernels (transforms/onnx/kernels.cu) on
// the host, for tests: the source is compiled as C++ under an emulation header (emu.h)
// and a launch runs the grid's threads one after another. With the device emulator
// (runtime/executor/gpu/gpuemu) it lets the device plan and every operator's launch run
// through ONNX's conformance tests on a machine without a GPU, on the very kernel source
// the GPU runs (built there from its PTX).
//
// It needs cgo and a C++17 compiler (x86-64's default target has no FMA, so
// nothing is contracted, as in the PTX); without cgo, Available is false and the tests that
// use it skip.
//
// kernels.cu includes the operators' .cu files and kernels.cuh, none of them in this
// package's directory, and Go's build cache does not see files included from outside it:
// after changing a kernel, rebuild this package (go test -a, or go clean -cache) before
// trusting the tests.
package kernelemu

/*
#cgo CXXFLAGS: -std=c++17 -O2 -w
#include <stdint.h>
#include <stdlib.h>
int kernelemu_launch(const char *name, long long grid, long long block, const uint64_t *args, int nargs);
void kernelemu_names(char *buf, int n);
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// Available reports whether the kernels can run here (this build has cgo).
const Available = true

// Launch runs kernel k over grid blocks of block threads with args, the
// launch's 8-byte parameters (gpuemu.KernelFunc's contract). Pointer
// arguments must address host memory (gpuemu's device memory).
func Launch(k gpu.Kernel, grid, block int, args []uint64) error {
	name := C.CString(k.Name)
	defer C.free(unsafe.Pointer(name))
	var p *C.uint64_t
	if len(args) > 0 {
		buf := C.malloc(C.size_t(8 * len(args)))
		defer C.free(buf)
		copy(unsafe.Slice((*uint64)(buf), len(args)), args)
		p = (*C.uint64_t)(buf)
	}
	switch C.kernelemu_launch(name, C.longlong(grid), C.longlong(block), p, C.int(len(args))) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("kernelemu: no kernel %s", k)
	default:
		return fmt.Errorf("kernelemu: %s takes another number of parameters than the %d passed", k, len(args))
	}
}

// Names returns the kernels it serves.
func Names() []string {
	buf := make([]byte, 4096)
	C.kernelemu_names((*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	return strings.Fields(string(buf[:strings.IndexByte(string(buf), 0)]))
}
