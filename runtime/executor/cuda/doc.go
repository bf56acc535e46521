// Package cuda is the GPU executor's device layer, over CUDA and cuBLAS.
//
// It holds one CUDA context on one GPU (device.go), the PTX modules the
// executor's step families registered (package gpu), cuBLAS, a device-memory
// budget with a buffer pool and resident data (memory.go), and lanes
// (streams) on which calls run. It knows no step: Device.Launch gives a
// step's launch a gpu.Call (call.go).
//
// A call runs on one of the Device's lanes: a non-blocking stream with its own cuBLAS
// handle bound to it. Its uploads, kernels, products and downloads are enqueued on
// the stream in order; Launch waits for the stream when the launch returns. Lanes run
// concurrently, so consecutive batches (the executor's semaphore lets MaxConcurrent
// through) overlap: one's copies on the copy engines while another's kernels run.
// Host memory that the driver has page-locked (the shared-memory arenas, registered
// with RegisterHost) is copied by DMA, asynchronously; other host memory is staged by
// the driver.
//
// Device memory goes through a budget (Open's budgetBytes): a request above it, or a
// CUDA_ERROR_OUT_OF_MEMORY, first frees the idle pooled buffers, then the least
// recently used resident data nobody is using, and only then fails with an error
// matching protocol.ErrOutOfMemory (the device is still usable; the client splits the batch).
// A sticky CUDA error (an illegal address, an ECC error, a lost MPS server) is an
// error matching protocol.ErrFatal; the Device then refuses every call with it, and the
// executor exits so that its client restarts it.
//
// Without the cuda build tag this package is empty: every other file carries
// `//go:build cuda` (but driver.go, the driver-version check, which is pure Go),
// because it needs cgo, the CUDA headers and link stubs, and gorgonia.org/cu,
// whose init() exits a process that has no usable GPU. The pure Go worker and the CPU
// reference executor never import it. Build it with
// containers/build-cuda.sh (which fetches the headers with containers/cuda-headers.sh),
// or by hand:
//
//	eval "$(go run ./cmd/beamgpu-ptx -env)"
//	go build -tags cuda ./runtime/executor/cuda/...
package cuda
