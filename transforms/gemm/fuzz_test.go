package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzSgemm checks every kernel against the float64 reference on fuzzed
// shapes (up to 80 x 80 x 900, past a k block), transposes, strides,
// scalars and data, with one and several goroutines. Seeds are in
// testdata/fuzz/FuzzSgemm; run it longer with
//
//	go test -run '^$' -fuzz FuzzSgemm -fuzztime 1m ./transforms/gemm/
func FuzzSgemm(f *testing.F) {
	f.Fuzz(func(t *testing.T, transA, transB bool, m, n uint8, k uint16, pad uint8, alpha, beta float32, seed uint64, workers uint8) {
		if !finite(alpha) || !finite(beta) || math.Abs(float64(alpha)) > 1e6 || math.Abs(float64(beta)) > 1e6 {
			t.Skip("alpha and beta are finite and moderate here (the tolerance is relative to their products)")
		}
		r := rand.New(rand.NewPCG(seed, 7))
		g := newCase(r, transA, transB, int(m%81), int(n%81), int(k%901), alpha, beta, int(pad%4))
		for _, kern := range kernels {
			got := g.run(kern, 1+int(workers%4))
			checkCase(t, g, got, kern.name)
		}
	})
}

func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
