// Package cudaenv stops a -tags cuda build without the CUDA headers with
// what to do, beside the compiler's "cuda.h: No such file or directory".
// Built without the cuda tag, it is empty.
package cudaenv
