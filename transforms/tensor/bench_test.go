package tensor

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/gemm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/mat"
)

// Benchmarks. Run them alone on an idle machine:
//
//	go test -run '^$' -bench . -benchtime 3x ./transforms/tensor/
//
// GFLOP/s counts 2 flops per multiply-add of the matrix product only.
// ratio_to_gemm is the GFLOP/s of the benchmarked operation divided by that
// of one plain gemm.Sgemm call of the same shape timed in the same run
// (1 = no overhead beyond the product).

// gemmFixture returns a function doing one plain gemm.Sgemm C = A Bᵀ
// (transB, B is n x k) or C = A B (B is k x n) on random data.
func gemmFixture(m, n, k int, transB bool) func() {
	r := rand.New(rand.NewPCG(1, 1))
	a, bm := randBatch(r, m, k).X, randBatch(r, n, k).X
	ldb := n
	if transB {
		ldb = k
	}
	c := make([]float32, m*n)
	return func() { gemm.Sgemm(false, transB, m, n, k, 1, a, k, bm, ldb, 0, c, n) }
}

// timeGemm times iters calls of gemmFixture's product.
func timeGemm(iters, m, n, k int, transB bool) time.Duration {
	f := gemmFixture(m, n, k, transB)
	start := time.Now()
	for range max(iters, 1) {
		f()
	}
	return time.Since(start) / time.Duration(max(iters, 1))
}

func reportGFLOPs(b *testing.B, flopsPerOp float64, gemm time.Duration) {
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(flopsPerOp/perOp/1e9, "GFLOP/s")
	if gemm > 0 {
		b.ReportMetric(gemm.Seconds()/perOp, "ratio_to_gemm")
	}
}

// BenchmarkDense: a 784 -> 256 ReLU layer on a batch of 256 rows.
func BenchmarkDense(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	d := randMLP(r, 784, 256).Layers[0]
	d.ReLU = true
	x := randBatch(r, 256, 784)
	for b.Loop() {
		if _, err := d.Forward(x); err != nil {
			b.Fatal(err)
		}
	}
	reportGFLOPs(b, 2*256*784*256, timeGemm(b.N, 256, 256, 784, false))
}

// BenchmarkKNNDistances: the neighbour search (k=5) of 1024 queries in
// 8192 reference rows of 784 columns: distances by the product plus top-k
// selection, for a few block sizes and worker counts (the reference is
// packed before the timing, as a pipeline packs it once per reference set).
func BenchmarkKNNDistances(b *testing.B) {
	const m, n, k = 1024, 8192, 784
	r := rand.New(rand.NewPCG(3, 4))
	q := randBatch(r, m, k)
	rb := randBatch(r, n, k)
	rb.Labels = make([]int32, n)
	ref, err := NewReference(rb, 10)
	if err != nil {
		b.Fatal(err)
	}
	ref.packedX()
	configs := []struct{ qb, rb, workers int }{
		{256, 4096, 0}, // the default
		{256, 4096, 1},
		{128, 2048, 0},
		{512, 8192, 0},
		{64, 1024, 0},
	}
	for _, c := range configs {
		b.Run(fmt.Sprintf("qb=%d,rb=%d,workers=%d", c.qb, c.rb, c.workers), func(b *testing.B) {
			defer func(q, r, w int) { knnQueryBlock, knnRefBlock, knnWorkers = q, r, w }(knnQueryBlock, knnRefBlock, knnWorkers)
			knnQueryBlock, knnRefBlock, knnWorkers = c.qb, c.rb, c.workers
			for b.Loop() {
				if _, _, err := Neighbors(q, ref, 5); err != nil {
					b.Fatal(err)
				}
			}
			reportGFLOPs(b, 2*m*n*k, timeGemm(b.N, m, n, k, true))
		})
	}
}

// BenchmarkGemmPaths compares ways of computing the 1024 x 8192 x 784
// product of the kNN distances: package gemm with B transposed (what KNN
// computes) or not, gonum's float32 BLAS (what KNN used before package
// gemm) the same two ways, and gonum/mat's float64 Dense.Mul (conversion to
// float64 not timed).
func BenchmarkGemmPaths(b *testing.B) {
	const m, n, k = 1024, 8192, 784
	for _, transB := range []bool{true, false} {
		name := map[bool]string{true: "NT", false: "NN"}[transB]
		b.Run("gemm-"+name, func(b *testing.B) {
			f := gemmFixture(m, n, k, transB)
			for b.Loop() {
				f()
			}
			reportGFLOPs(b, 2*m*n*k, 0)
		})
		b.Run("blas32-"+name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			a := blas32.General{Rows: m, Cols: k, Stride: k, Data: randBatch(r, m, k).X}
			bg := blas32.General{Rows: n, Cols: k, Stride: k, Data: randBatch(r, n, k).X}
			tB := blas.Trans
			if !transB {
				bg, tB = blas32.General{Rows: k, Cols: n, Stride: n, Data: bg.Data}, blas.NoTrans
			}
			c := blas32.General{Rows: m, Cols: n, Stride: n, Data: make([]float32, m*n)}
			for b.Loop() {
				blas32.Gemm(blas.NoTrans, tB, 1, a, bg, 0, c)
			}
			reportGFLOPs(b, 2*m*n*k, 0)
		})
	}
	b.Run("mat64-Mul", func(b *testing.B) {
		r := rand.New(rand.NewPCG(5, 6))
		fill := func(rows, cols int) *mat.Dense {
			d := make([]float64, rows*cols)
			for i := range d {
				d[i] = r.NormFloat64()
			}
			return mat.NewDense(rows, cols, d)
		}
		a, bt := fill(m, k), fill(n, k)
		var c mat.Dense
		for b.Loop() {
			c.Mul(a, bt.T())
		}
		reportGFLOPs(b, 2*m*n*k, 0)
	})
}

// BenchmarkMLPInference: the shipped model on the full Fashion-MNIST test
// set (10,000 images).
func BenchmarkMLPInference(b *testing.B) {
	m, err := LoadMLP(filepath.Join(fashionDir, "mlp-784-256-128-10.bgmlp"))
	if err != nil {
		b.Fatal(err)
	}
	test, err := Scaler{Mode: ScaleUnit}.Apply(testSet(b))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := m.Predict(test); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(test.Rows)*float64(b.N)/b.Elapsed().Seconds(), "images/s")
	reportGFLOPs(b, 2*float64(test.Rows)*(784*256+256*128+128*10), 0)
}

// BenchmarkKNNFull: kNN (k=5, uniform) of the 10,000 Fashion-MNIST test
// images against the 60,000 training images (skipped unless the training
// set is installed: apt-get install dataset-fashion-mnist). One iteration
// takes seconds. reference-seconds is the preparation of the reference set
// (norms, and packing for the product), done once before the timed loop.
func BenchmarkKNNFull(b *testing.B) {
	train := trainSet(b)
	train, err := Scaler{Mode: ScaleUnit}.Apply(train)
	if err != nil {
		b.Fatal(err)
	}
	test, err := Scaler{Mode: ScaleUnit}.Apply(testSet(b))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	ref, err := NewReference(train, 10)
	if err != nil {
		b.Fatal(err)
	}
	ref.packedX() // what the first Neighbors call does
	prep := time.Since(start)
	var acc float64
	for b.Loop() {
		p, err := KNN(test, ref, 5, WeightUniform)
		if err != nil {
			b.Fatal(err)
		}
		acc, _ = p.Accuracy()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "seconds")
	b.ReportMetric(prep.Seconds(), "reference-seconds")
	reportGFLOPs(b, 2*10000*60000*784, 0)
	b.ReportMetric(acc, "accuracy")
}
