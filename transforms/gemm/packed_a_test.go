package gemm

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// A packed A gives bitwise Sgemm's result, with every kernel, both
// layouts of A and B, k past a block, rows past a tile and past mc, on one
// goroutine and several.
func TestSgemmPackedAEqualsSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, kern := range kernels {
		for _, dims := range [][3]int{{37, 300, 785}, {5, 64, 7}, {600, 257, 100}, {1, 1, 1}} {
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					g := newCase(r, tA, tB, dims[0], dims[1], dims[2], 0.5, 0.25, 1)
					want := g.run(kern, 1)
					pk := packAWith(kern, tA, g.m, g.k, g.a, g.lda)
					require.Equal(t, g.m, pk.Rows())
					require.Equal(t, g.k, pk.Cols())
					for _, workers := range []int{1, 3} {
						c := append([]float32(nil), g.c...)
						p := &problem{transB: tB, m: g.m, n: g.n, k: g.k, alpha: g.alpha, lda: g.k, b: g.b, ldb: g.ldb, beta: g.beta, c: c, ldc: g.ldc, kern: kern, packedA: pk}
						p.check()
						p.run(workers)
						require.Equal(t, want, c, "%s %v: %d workers", kern.name, g, workers)
					}
				}
			}
		}
	}
	// The exported entry point, with the machine's kernel.
	g := newCase(r, false, false, 20, 100, 50, 1, 0, 0)
	want := g.run(best(), 1)
	pk := PackA(false, g.m, g.k, g.a, g.lda)
	c := make([]float32, len(g.c))
	SgemmPackedA(0, pk, false, g.n, 1, g.b, g.ldb, 0, c, g.ldc)
	require.Equal(t, want, c)
	require.PanicsWithValue(t, "gemm: negative size m=-1 k=2", func() { PackA(false, -1, 2, nil, 2) })
}
