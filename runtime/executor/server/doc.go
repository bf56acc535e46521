// Package server is the executor side of the beamgpu GPU executor protocol.
//
// An executor binary registers its ops (Register, in the way image formats
// register with package image), then calls New and Serve on a socket from
// Listen. Each op reads its inputs straight from the shared-memory arena and
// writes its outputs into regions it asks for with the Outputs function it is
// given, so a batch is never copied through the socket.
//
// The server runs one goroutine per client connection and bounds:
//
//   - concurrent batches, across all connections, with a semaphore
//     (Config.MaxConcurrent, --max_concurrent; like spark-rapids'
//     concurrentGpuTasks), so several worker threads do not thrash one GPU;
//   - the bytes of inputs and outputs held at once (Config.MemoryBudget,
//     --memory_budget): a request whose inputs and outputs alone exceed the
//     budget gets StatusOutOfMemory at once, so the client can split the batch
//     and retry; one that fits alone waits for others to finish.
//
// Ops report failures by returning errors: a plain error is StatusError (the
// batch failed, the executor is fine); one wrapping ErrOutOfMemory is
// StatusOutOfMemory; one wrapping ErrFatal (a sticky CUDA error: the context
// is unusable) is StatusFatal, after which Serve stops and returns the error
// and the executor exits non-zero, for the client to restart it. A panicking
// op is StatusError. Shutdown stops accepting, lets running batches finish
// and closes the connections.
package server
