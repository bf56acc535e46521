// Package train trains the MLPs of package tensor.
//
// It trains with softmax cross-entropy, Adam and mini-batches, in pure Go
// (package gemm's float32 products), deterministically.
//
// Determinism is the point: with the same Config and data on the same
// machine, Run gives bitwise the same weights whether it runs at once or is
// stopped (context cancelled, StopAfter, a crash) and resumed from a
// checkpoint any number of times. The initial weights come from the seed
// (math/rand/v2's PCG), the order of the examples in epoch e is a permutation
// drawn from (seed, e), so a resumed run replays it without storing a
// random-number generator; every matrix product sums each output element in
// one goroutine in a fixed order, and the other reductions are sequential.
//
// Checkpoints (ckpt-<step>.bgckpt in CheckpointDir) hold the weights, Adam's
// moments, the epoch, the position in it and the step, and the configuration
// they depend on. They are written atomically (temporary file, fsync,
// rename) with a SHA-256 checksum; on start Run resumes from the newest one
// that verifies, so a corrupt newest checkpoint (a torn disk, a truncated
// copy) falls back to the previous one. The two newest are kept.
//
// The Fashion-MNIST model shipped with pipelines/fashion is trained by
// pipelines/fashion/train, a thin command around Run.
package train
