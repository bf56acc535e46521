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
//     concurrency semaphore, the memory budget and graceful shutdown.
//   - client: the worker side, pure Go: finds, starts, shares and restarts
//     the executor; Call runs an op on a batch; Probe implements
//     backend.Executor.
//   - testops: generic ops (echo, sum_f32, sleep, crash, fatal) for the
//     protocol's tests and benchmarks.
//   - stepops: the steps' GPU ops: a codec per step gives both the step's
//     GPU implementation (a call to the executor) and its reference op (the
//     step's CPU code, served by the reference executor).
//   - executortest: lets a test binary serve as the executor, so tests of
//     pipelines run --backend=gpu through a real second process.
//   - cmd/beamgpu-executor: the executor binary. Without build tags it is the
//     CPU reference executor (CGO_ENABLED=0), so CI tests the whole
//     out-of-process path without a GPU; with -tags cuda it serves the same
//     op names with CUDA kernels.
//
// This package itself holds Main, the executor's command line (serve,
// selftest, version), which the binary and test binaries call.
package executor
