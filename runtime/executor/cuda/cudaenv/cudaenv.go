//go:build cuda

package cudaenv

/*
#if !__has_include(<cuda.h>)
#error "beamgpu: cuda.h not found: a -tags cuda build needs the CUDA headers and link stubs in CGO_CFLAGS and CGO_LDFLAGS. Load them with: eval \"$(go run github.com/beamgpu/beamgpu/cmd/beamgpu-ptx -env)\" (in a module with the tool line: eval \"$(go tool beamgpu-ptx -env)\"; it fetches CUDA 11.8 once into a cache), or use a CUDA toolkit: CGO_CFLAGS=-I/usr/local/cuda/include CGO_LDFLAGS=-L/usr/local/cuda/lib64/stubs"
#endif
#cgo LDFLAGS: -lcuda
#include <cuda.h>
static int beamgpu_init(void) { return (int)cuInit(0); }
static const char *beamgpu_init_error(int r) {
	const char *s = NULL;
	if (cuGetErrorName((CUresult)r, &s) != CUDA_SUCCESS || s == NULL) {
		return "CUDA_ERROR_UNRECOGNIZED";
	}
	return s;
}
*/
import "C"

import (
	"fmt"
	"log/slog"
	"os"
)

// ExitNoDevice is the exit status of a process that finds no device: the
// executor's status for "no usable device".
const ExitNoDevice = 4

// init initialises the driver before gorgonia.org/cu does: cu's init exits
// the process with a message that names no cause when cuInit fails, which is
// what an empty CUDA_VISIBLE_DEVICES, or one naming only GPUs that do not
// exist, makes it do. This package's import path sorts before cu's and it
// imports nothing cu does not, so Go (1.21 on) initialises it first; here
// the failure is said clearly (through log/slog, to stderr, which the
// client's error and the explain report carry) and the process exits with
// ExitNoDevice.
func init() {
	r := C.beamgpu_init()
	if r == 0 {
		return
	}
	why := fmt.Sprintf("cuInit: %s (%d)", C.GoString(C.beamgpu_init_error(r)), int(r))
	v, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	if r != C.CUDA_ERROR_NO_DEVICE {
		list := "CUDA_VISIBLE_DEVICES not set"
		if set {
			list = fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q", v)
		}
		slog.Error("beamgpu-executor: no usable device: the CUDA driver does not start", "error", why, "devices", list)
		os.Exit(ExitNoDevice)
	}
	switch {
	case set && v == "":
		why = "CUDA_VISIBLE_DEVICES is set and empty (" + why + ")"
	case set:
		why = fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q names no GPU that exists on this machine (%s)", v, why)
	default:
		why = "the driver finds no GPU (" + why + ")"
	}
	slog.Error("beamgpu-executor: no device visible", "reason", why)
	os.Exit(ExitNoDevice)
}
