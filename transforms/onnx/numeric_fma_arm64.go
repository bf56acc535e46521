package onnx

// fma32 is a*b + c rounded once to float32 (to nearest, ties to even): on
// arm64 the compiler fuses the expression into one FMADDS, as the Go
// specification lets it (https://go.dev/ref/spec#Floating_point_operators;
// an explicit float32(a*b) would round the product first). TestFMA32
// checks it against math/big.
func fma32(a, b, c float32) float32 {
	return a*b + c
}
