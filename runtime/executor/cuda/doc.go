// Package cuda is the GPU executor's device layer: one CUDA context on one GPU, the
// PTX modules the executor's step families registered (package gpu), cuBLAS, a
// device-memory budget, a buffer pool, resident data and streams. It knows no step:
// Device.Launch gives a step's launch a gpu.Call (see device.go).
//
// Without the cuda build tag this package is empty: every other file carries
// `//go:build cuda` (but driver.go, the driver-version check, which is pure Go),
// because it needs cgo, the CUDA 11.8 headers and link stubs, and gorgonia.org/cu,
// whose init() exits a process that has no usable GPU. The pure Go worker and the CPU
// reference executor never import it. Build it with
// containers/build-cuda.sh (which fetches the headers with containers/cuda-headers.sh),
// or by hand:
//
//	eval "$(containers/cuda-headers.sh)"
//	CGO_ENABLED=1 CGO_CFLAGS="$CGO_CFLAGS" CGO_LDFLAGS="$CGO_LDFLAGS" go build -tags cuda ./runtime/executor/cuda/...
package cuda
