// Package nd holds n-dimensional arrays of ONNX's element types: what a
// model's inputs and outputs are, in RunInference and in the ONNX runtime.
//
// An Array is a type, a shape and the raw little-endian bytes of its
// elements in row-major order; As views them as a typed slice without a
// copy. Arrays that this package allocates are aligned for every element
// type (8 bytes), so their views never copy.
//
// The element types are ONNX's TensorProto.DataType numbers, so a model's
// types convert as they are. Float16 and BFloat16 are storage types: the
// runtime computes with float32 and converts at the edges (Widen, Narrow).
// Strings and complex numbers are not supported.
//
// Like tensor.Batch, an Array is a value: copying it copies the slice
// headers, not the data.
package nd
