package gemm

// ReLU sets every negative element of x to 0, in place: x[i] = 0 where
// x[i] < 0, so NaN and -0 stay as they are (the same as the loop
// `if v < 0 { x[i] = 0 }`, bit for bit). On amd64 it runs 16 (AVX-512) or 8
// (AVX2) elements a step without branches; a scalar loop mispredicts about
// every other element of a layer's output, which costs more than the layer's
// product with this package's kernels.
func ReLU(x []float32) {
	done := reluVector(x)
	for i, v := range x[done:] {
		if v < 0 {
			x[done+i] = 0
		}
	}
}
