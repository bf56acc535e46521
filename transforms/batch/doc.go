// Package batch groups a PCollection's elements into batches of adaptive size.
//
// The size adapts to the cost of the work downstream; Unbatch takes the
// batches apart again.
//
// beamgpu steps work on batches (tiles of pixels, matrices of rows) so that
// Beam's per-element cost and the GPU's launch and transfer costs are paid
// once per batch instead of once per element. How large a batch should be
// depends on that fixed cost and on the per-element cost of the step, which
// differ from step to step and machine to machine. Elements finds out: it is
// the Go counterpart of Beam Python's BatchElements (with its
// _BatchSizeEstimator), which the Go SDK lacks (the SDK's own
// transforms/batch has only the keyed, stateful GroupIntoBatches).
//
//   - Elements: PCollection<T> -> PCollection<[]T>. Unkeyed; it batches the
//     elements of each bundle as they arrive and emits what is left when the
//     bundle finishes, so no batch spans two bundles and the last batch of a
//     bundle may be smaller than MinBatchSize.
//   - Unbatch: PCollection<[]T> -> PCollection<T>, the inverse.
//
// # Batch size
//
// An Estimator times each emit of a batch: in a fused stage the downstream
// DoFns run inside the emit call, so that time is the downstream cost of the
// batch (where the next stage is across a shuffle, it is only the cost of
// encoding the batch). It fits time = a + b*size to the last 100 timings by
// least squares weighted by 1/size² (the noise grows with the size; small
// batches tell most about the fixed cost a), leaving out, once it has 10
// timings, those whose time per element is more than 3 robust standard
// deviations off the fit (a GC pause, a busy device). It then proposes the
// smallest of the sizes at which a batch reaches one of its targets:
//
//   - TargetBatchOverhead: the fixed cost is this share of a batch's time,
//     a/(a+b*size) = overhead; larger batches would gain little. Default 0.05.
//   - TargetBatchDuration: the per-element part of a batch's time is this,
//     b*size = duration. Default 10s.
//   - TargetBatchDurationWithFixedCost: a batch's whole time is this,
//     a+b*size = duration. Off by default.
//
// The defaults apply only when none of the three is set, and are those of
// Beam Python since 2.46 (before it, Python used a 1s target including the
// fixed cost: set TargetBatchDurationWithFixedCost to 1s for that).
//
// The size is then clamped to [MinBatchSize, MaxBatchSize] (defaults 1 and
// 10000) and to twice the largest size timed so far, so that the fit is never
// extrapolated far and sizes grow at most geometrically: 1, 2, 4, 8, ...
// Once it has more than 10 timings, the estimator spreads its proposals by up
// to ±25% around the target, so that the fit keeps seeing several sizes. The
// first batch of every bundle is not timed (its cost includes one-off setup)
// and its size is proposed again. With MinBatchSize == MaxBatchSize, batches
// have that fixed size and nothing is estimated.
//
// This is Python's estimator but for two points. Python's leaves out the 20%
// largest batches and, by Cook's distance, outliers of high leverage only: on
// a simulated cost with one batch in 20 four times slower, that sent sizes to
// MaxBatchSize, which the residual test above does not. And Python caps a
// size at twice the last size timed, which after every bundle's short last
// batch starts the growth again.
//
// MaxBatchSize also bounds memory: a batch of MaxBatchSize elements is held
// by Elements and, as a whole, by the step downstream.
//
// # Limits
//
//   - Elements requires its input in the global window (TryElements returns
//     an error, Elements panics, otherwise): a Go DoFn can emit from
//     FinishBundle only into the global window, so the partial batches left
//     at the end of a bundle could not be given their elements' windows. For
//     windowed data, batch per key with the SDK's batch.GroupIntoBatches.
//   - A batch carries the latest timestamp of its elements; after Unbatch
//     every element has its batch's timestamp. (Python gives batches in the
//     global window the end of the window instead.)
//   - The element type may be anything Beam can encode except a KV: wrap a
//     pair in a struct to batch it.
//   - Downstream DoFns with a typed slice parameter ([]float32) receive the
//     batch converted by Beam from []beam.T, one element at a time.
//
// # Metrics
//
// In namespace "beamgpu": counters "batch.batches" and "batch.elements" and
// distribution "batch.size" (elements per batch), per transform.
package batch
