package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// benchShapes are the products of the issue: a batch through a dense layer
// (8192 rows, 784 -> 256) and the kNN distances of the Fashion-MNIST test
// set against its training set (10000 x 784 times 784 x 60000; C alone is
// 2.4 GB).
var benchShapes = [][3]int{{8192, 256, 784}, {10000, 60000, 784}}

// BenchmarkSgemm: C = A B at the shapes (m x k times k x n, none
// transposed, as numpy's a @ b), GFLOP/s counting 2 flops per multiply-add:
// the mean over the iterations, and best-GFLOP/s of the fastest one (what
// the numpy peer, containers/bench/numpy_gemm.py, reports; make bench runs
// both, interleaved).
func BenchmarkSgemm(b *testing.B) {
	for _, s := range benchShapes {
		m, n, k := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			x, y, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
			Sgemm(false, false, m, n, k, 1, x, k, y, n, 0, c, n) // warm-up, as the peer's
			flops := 2 * float64(m) * float64(n) * float64(k)
			best := time.Duration(math.MaxInt64)
			for b.Loop() {
				start := time.Now()
				Sgemm(false, false, m, n, k, 1, x, k, y, n, 0, c, n)
				best = min(best, time.Since(start))
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(flops/best.Seconds()/1e9, "best-GFLOP/s")
		})
	}
}

// BenchmarkKernels: the 8192x784x256 product with each kernel this machine
// has (the portable one is what other architectures and the purego tag get).
func BenchmarkKernels(b *testing.B) {
	m, n, k := benchShapes[0][0], benchShapes[0][1], benchShapes[0][2]
	r := rand.New(rand.NewPCG(1, 2))
	x, y, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
	for _, kern := range kernels {
		b.Run(kern.name, func(b *testing.B) {
			for b.Loop() {
				sgemmWith(kern, 0, false, false, m, n, k, 1, x, k, y, n, 0, c, n)
			}
			b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGonum is the 8192x784x256 product with gonum's blas32.Gemm (what
// package tensor used before), for the record.
func BenchmarkGonum(b *testing.B) {
	m, n, k := benchShapes[0][0], benchShapes[0][1], benchShapes[0][2]
	r := rand.New(rand.NewPCG(1, 2))
	x, y, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
	for b.Loop() {
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, blas32.General{Rows: m, Cols: k, Stride: k, Data: x},
			blas32.General{Rows: k, Cols: n, Stride: n, Data: y}, 0, blas32.General{Rows: m, Cols: n, Stride: n, Data: c})
	}
	b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
