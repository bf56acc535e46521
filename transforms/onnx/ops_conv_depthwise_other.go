//go:build !amd64 || purego

package onnx

// Conv (opsets 1, 11), depthwise, and MaxPool (1, 8, 10, 11, 12): where
// there are no AVX-512 kernels (other architectures, the purego build tag),
// ops_conv_depthwise.go's in Go and none for MaxPool.

// dwRows computes rows x cols outputs y[r*ldy+c] = bias + sum over taps t
// of w[t] * srcs[t][r*ldx+c].
func dwRows(y []float32, ldy, rows, cols int, srcs []*float32, ldx int, w []float32, bias float32) {
	dwRowsGo(y, ldy, rows, cols, srcs, ldx, w, bias)
}

// deint2 writes, for each of rows rows, src[r*lds+2i] to even[r*ldd+i]
// and src[r*lds+2i+1] to odd[r*ldd+i], for i < n.
func deint2(even, odd, src []float32, rows, n, ldd, lds int) {
	deint2Go(even, odd, src, rows, n, ldd, lds)
}

// maxRows has no vector kernel here.
func maxRows(y []float32, ldy, rows, cols int, srcs []*float32, ldx int) bool { return false }

// dwVector says vector kernels run here: never in this build.
var dwVector = false

// dwWidth is the lanes of dwRows's vector kernel: none in this build.
var dwWidth = 0
