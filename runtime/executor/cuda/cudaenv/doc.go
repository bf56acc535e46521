// Package cudaenv says what to do when a -tags cuda build lacks the CUDA headers.
//
// Its message stands beside the compiler's "cuda.h: No such file or
// directory". Built without the cuda tag, it is empty.
package cudaenv
