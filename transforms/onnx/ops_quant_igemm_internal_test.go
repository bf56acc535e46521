package onnx

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// igemm's sums equal the plain loop's (int64, the values less their zero
// points) at every width this CPU runs (0: the plain Go kernels): odd and
// edge M and N (tiles completed), odd K and K across blocks (igKC pairs)
// up to 4096, uint8 and int8 operands at the ends of their ranges, zero
// points 0, 128, 255 (uint8) and -128 (int8), per row of A and per column
// of B.
func TestIgemmEqualsLoop(t *testing.T) {
	saved := igWidth
	defer func() { igWidth = saved }()
	for _, width := range simdWidths() {
		igWidth = min(width, 8)
		t.Run(fmt.Sprintf("lanes=%d", igWidth), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			shapes := [][3]int{{1, 1, 1}, {4, 16, 2}, {3, 17, 3}, {5, 15, 255}, {13, 40, 256}, {8, 32, 257}, {7, 33, 300}, {1, 50, 4096}, {9, 16, 4095}}
			for _, s := range shapes {
				m, n, k := s[0], s[1], s[2]
				for zi, zps := range [][2][]int32{{nil, nil}, {{128}, {0}}, {{255}, {-128}}, {perIndex(rng, m, 0, 255), perIndex(rng, n, -128, 127)}} {
					a := make([]uint8, m*k)
					b := make([]int8, k*n)
					for i := range a {
						a[i] = uint8(rng.IntN(256))
						if rng.IntN(8) == 0 {
							a[i] = 255 * uint8(rng.IntN(2)) // the ends
						}
					}
					for i := range b {
						b[i] = int8(rng.IntN(256) - 128)
						if rng.IntN(8) == 0 {
							b[i] = -128
						}
					}
					za, zb := zps[0], zps[1]
					want := make([]int64, m*n)
					for i := range m {
						for j := range n {
							var sum int64
							for p := range k {
								sum += int64(int32(a[i*k+p])-zpAt(za, i)) * int64(int32(b[p*n+j])-zpAt(zb, j))
							}
							want[i*n+j] = sum
						}
					}
					pa := make([]int16, igASize(m, k))
					igPackA(pa, a, k, m, k, za)
					bs := make([]int16, k*n)
					for p := range k {
						for j := range n {
							bs[p*n+j] = int16(int32(b[p*n+j]) - zpAt(zb, j))
						}
					}
					pb := make([]int16, igBSize(k, n))
					igPackB(pb, bs, n, k, n)
					ldc := n + 3
					c := make([]int32, m*ldc)
					for i := range c {
						c[i] = -7
					}
					igemm(pa, m, pb, n, igPairsOf(k), c, ldc)
					for i := range m {
						for j := range n {
							require.Equal(t, want[i*n+j], int64(c[i*ldc+j]), "m %d n %d k %d zero points %d: C[%d][%d]", m, n, k, zi, i, j)
						}
						for j := n; j < ldc && i*ldc+j < len(c); j++ {
							require.Equal(t, int32(-7), c[i*ldc+j], "m %d n %d k %d: written past row %d at %d", m, n, k, i, j)
						}
					}
				}
			}
		})
	}
}

// perIndex is n zero points in [lo, hi].
func perIndex(rng *rand.Rand, n int, lo, hi int32) []int32 {
	z := make([]int32, n)
	for i := range z {
		z[i] = lo + rng.Int32N(hi-lo+1)
	}
	return z
}
