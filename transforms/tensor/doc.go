// Package tensor is beamgpu's family of machine-learning steps (decode,
// standardize, dense, softmax, argmax, topk, knn, mlp): each step's
// declaration (steps.go), CPU code, codecs (codec.go), CUDA kernels
// (kernels.cu, embedded as PTX) and launches (launch_cuda.go, behind the
// cuda tag). It imports no Beam package, so that the GPU executor and the
// trainer link none: the steps' DoFns and PTransforms are package
// tensorbeam's, their stubs package stubs/tensor's.
//
// It holds:
//
//   - Batch, a matrix of float32 rows with optional labels (the unit of
//     work of the steps; it names itself and reports its size for the step
//     metrics), and Predictions, the output of a classifier;
//   - an IDX decoder (the MNIST and Fashion-MNIST format, plain or gzip),
//     hardened against corrupt and hostile headers (fuzzed);
//   - Scaler, column standardisation (x/255 or z-score);
//   - Dense, Softmax, Argmax, TopK and MLP, a multi-layer perceptron with a
//     versioned, checksummed model file (SaveMLP writes it atomically);
//   - KNN, brute-force k-nearest-neighbours classification.
//
// Why this shape: matrix products go through gonum's float32 BLAS
// (blas32.Gemm), which is pure Go (plus gonum's SSE assembly), so the
// pipeline binary builds with CGO_ENABLED=0 and cross-compiles for Dataflow
// workers; a GPU executor can serve the same steps on the same Batch types.
// Everything is deterministic: the same inputs give bitwise the same outputs
// whatever the number of cores (each output element of a product is summed
// by one goroutine in a fixed order; ties have documented rules).
//
// Performance (2-core AMD EPYC development machine, idle, Go 1.26, gonum
// v0.17.0; see bench_test.go): gonum's float32 Gemm runs at 25-30 GFLOP/s
// on both cores, because its kernels are SSE dot and axpy loops (4 lanes, no
// FMA). A Dense 784->256 layer on 256 rows runs at 22 GFLOP/s, MLP inference
// at about 57,000 images/s, and the brute-force kNN of the 10,000
// Fashion-MNIST test images against the 60,000 training images (k=5) takes
// 35 s (27 GFLOP/s). A tuned AVX2/AVX-512 BLAS would do that kNN in about
// 10 s; block sizes, worker counts and gonum's float64 path (18 GFLOP/s)
// change the gonum figure by 10% at most. Closing the gap needs an FMA
// kernel (Go assembly) or the GPU.
//
// Inputs are validated (shape, NaN and infinity) and every error names its
// source: the file, the row (Offset+i) and the column where it applies.
//
// The shipped Fashion-MNIST model, pipelines/fashion/data/mlp-784-256-128-10.bgmlp,
// is trained by pipelines/fashion/train (package transforms/tensor/train) on
// pixels scaled by Scaler{Mode: ScaleUnit} (x/255): scale raw IDX pixels the
// same way before Predict. The unit scaling was chosen over z-score so that
// the model file holds no fitted statistics and a pipeline needs nothing but
// the model.
package tensor
