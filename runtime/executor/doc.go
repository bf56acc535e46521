// Package executor is the home of beamgpu's out-of-process GPU executor.
//
// Why out of process: the CUDA bindings the project uses (gorgonia.org/cu)
// exit the process in init() where no GPU is usable, need cgo and the driver
// library to even start, and the worker binary that Beam launches must stay
// pure Go (Dataflow cross-compiles it with CGO_ENABLED=0) and run on workers
// without a GPU. So GPU work runs in a separate executor process, shipped in
// the worker container at client.DefaultPath, started lazily by the worker on
// first GPU use and shared by all the bundles of the process.
//
// The pieces, each a small package:
//
//   - protocol: the versioned wire protocol over a Unix socket (handshake,
//     requests, responses, length-prefixed frames, fd passing).
//   - shm: the shared-memory arena that carries the bulk data, so that the
//     socket only carries small frames and the transport costs about a memcpy.
//   - server: the executor side: an op registry, the serving loop, the
//     devices (every GPU the process sees: placement on the least-loaded,
//     a failed device taken out), each device's concurrency semaphore and
//     memory budget, and graceful shutdown.
//   - client: the worker side, pure Go: finds, starts, shares and restarts
//     the executor; Call runs an op on a batch; Probe implements
//     backend.Executor.
//   - gpu: the device API a step's CUDA launch is written against (a Call:
//     uploads, kernels from its family's PTX module, cuBLAS products, data
//     resident across calls, downloads into shared memory), pure Go, with a
//     Recorder that checks launches without a GPU.
//   - cuda (-tags cuda): the device layer over gorgonia.org/cu and cuBLAS
//     that implements gpu.Call on a GPU: modules, lanes (streams), a buffer
//     pool, the memory budget, page-locked arenas, sticky-error handling.
//   - testops: generic ops (echo, sum_f32, sleep, crash, fatal) for the
//     protocol's tests and benchmarks, served only by test builds
//     (executortest).
//   - executortest: lets a test binary serve as the executor, so tests run
//     ops through a real second process.
//
// Nothing here knows a step: runtime/ imports nothing from transforms/. The
// steps' ops are built by transforms/step (ReferenceOp, LaunchOp) and an
// executor binary is a main of a few lines over transforms/step/serve that
// imports the families it serves (pipelines/beamgpu-executor is beamgpu's).
// Without build tags it is the CPU reference executor (CGO_ENABLED=0), so CI
// tests the whole out-of-process path without a GPU; with -tags cuda it
// serves the same ops with the families' CUDA launches.
//
// This package itself holds Main, the executor's command line (serve,
// selftest, version), which executor binaries and test binaries call.
package executor
