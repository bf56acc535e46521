// Package client is the worker side of the GPU executor.
//
// It is pure Go (no cgo, no CUDA), so the pipeline binary can import it and
// still build with CGO_ENABLED=0 and run on machines without a GPU.
//
// Finding the executor (Find): the path the caller got from its
// --gpu_executor flag, else $BEAMGPU_EXECUTOR, else DefaultPath (where the
// worker container ships it). Probe(flagValue) is the backend.Executor the
// selector asks: available when that binary is there, starts and its
// handshake reports a device; otherwise not, with the reason.
//
// Lifecycle: a Client starts its executor lazily, on the first call, as
// "PATH serve --socket=SOCK" with the socket in a fresh private directory,
// and waits for the socket (Config.StartTimeout). Shared(flagValue) returns
// the process-wide Client for that executor, so every bundle and goroutine
// of a worker shares one executor process. Each concurrent call uses its own
// connection and shared-memory arena (a small pool of them is kept), so
// calls run in parallel up to the executor's --max_concurrent.
//
// Calls: Call copies the inputs into the connection's shared-memory arena,
// runs the op and returns copies of its outputs, owned by the caller.
// CallView returns the outputs as zero-copy views of shared memory instead,
// valid until Result.Release (which must be called). CallFill lets the
// caller write its inputs straight into shared memory, so a batch can be
// produced in place, with no copy at all on the client side.
//
// Failures: an op's error is an *OpError (errors.Is protocol.ErrOutOfMemory
// when the batch does not fit the executor's memory budget: split it and
// retry; errors.Is protocol.ErrNeedSide when the op needs side data the
// request only named: send it again with the side data).
// When the executor dies mid-call (a crash, or ErrFatal: a sticky CUDA
// error, after which it exits), the call fails with a retryable error
// (IsRetryable); the client retires that process, starts a new one on next
// use, and retries the call once itself. A call either returns its outputs
// once or fails: outputs of a failed attempt are never returned, so nothing
// is lost or duplicated. Ops must therefore be deterministic functions of
// their inputs (they are: a step's batch kernel).
//
// Deadlines: every request has one, derived from its bytes and the rate
// its op was measured at, never under Config.CallFloor, and while it is out
// the executor's process is watched: stopped (SIGSTOP) or a zombie for
// Config.StallAfter is a stall at once. A stalled executor is killed and
// replaced and the batch sent again once, as for a crash; a second stall
// is a *StallError, "GPU executor stalled for N s", which wraps
// ErrExecutorDied (the steps then use the CPU under auto, fail the batch
// under gpu). Each retired executor is logged with the reason.
package client
