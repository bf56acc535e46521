//go:build !amd64 || purego

package onnx

// dwRows computes rows x cols outputs y[r*ldy+c] = bias + sum over taps t
// of w[t] * srcs[t][r*ldx+c].
func dwRows(y []float32, ldy, rows, cols int, srcs []*float32, ldx int, w []float32, bias float32) {
	dwRowsGo(y, ldy, rows, cols, srcs, ldx, w, bias)
}

// deint2 writes src[2i] to even[i] and src[2i+1] to odd[i], for i < n.
func deint2(even, odd, src []float32, n int) {
	for i := range n {
		even[i], odd[i] = src[2*i], src[2*i+1]
	}
}

// dwVector says vector kernels run here: never in this build.
var dwVector = false
