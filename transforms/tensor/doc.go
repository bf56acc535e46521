// Package tensor is beamgpu's family of machine-learning steps.
//
// The steps are decode, standardize, dense, softmax, argmax, topk, knn and
// mlp: each step's declaration (steps.go), CPU code, codecs (codec.go),
// CUDA kernels (kernels.cu, embedded as PTX) and launches (launch_cuda.go,
// behind the cuda tag). It imports no Beam package, so that the GPU executor and the
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
// Why this shape: matrix products go through package gemm
// (transforms/gemm), a float32 GEMM in pure Go and Go assembly
// (AVX-512 and AVX2+FMA micro-kernels chosen at run time, a portable Go
// kernel elsewhere), so the pipeline binary builds with CGO_ENABLED=0 and
// cross-compiles for Dataflow workers; a GPU executor can serve the same
// steps on the same Batch types. Everything is deterministic: the same
// inputs give bitwise the same outputs whatever the number of cores (each
// output element of a product is summed by one goroutine in a fixed order
// that depends on the shape alone; ties have documented rules).
//
// The benchmarks (bench_test.go: BenchmarkDense, BenchmarkMLPInference,
// BenchmarkKNNFull, each with its ratio to a plain product of its shape)
// run with make bench; their results are in docs/benchmarks.md.
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
