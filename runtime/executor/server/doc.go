// Package server is the executor side of the beamgpu GPU executor protocol.
//
// An executor binary registers its ops (Register, in the way image formats
// register with package image), then calls New and Serve on a socket from
// Listen. Each op reads its inputs straight from the shared-memory arena and
// writes its outputs into regions it asks for with the Outputs function it is
// given, so a batch is never copied through the socket.
//
// The server places each batch on one of its devices (Config.Devices: every
// GPU the executor sees, or the reference executor's virtual ones; one by
// default), the least loaded that still serves, and tells the op which
// (DeviceOf); a device whose op fails fatally is taken out and the batch
// runs again on another (see device.go). Devices reports each device's
// batches, bytes, busy time and side data filled (FirstUse), which clients
// ask for with the protocol's Stats message.
//
// The server runs one goroutine per client connection and bounds, on each
// device:
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
// StatusOutOfMemory; one wrapping ErrNeedSide (side data the request only
// names and the executor does not hold) is StatusNeedSide; one wrapping ErrFatal (a sticky CUDA error: the context
// is unusable) takes its device out, and once no device is left it is
// StatusFatal, after which Serve stops and returns the error and the
// executor exits non-zero, for the client to restart it. A panicking
// op is StatusError. Shutdown stops accepting, lets running batches finish
// and closes the connections.
package server
