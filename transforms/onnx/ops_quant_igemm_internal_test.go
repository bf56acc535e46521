package onnx

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/internal/peak"

	"github.com/stretchr/testify/assert"
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

// ubgemm's sums equal the plain loop's at every width this CPU runs (the
// VNNI kernel at AVX-512's where the CPU has VNNI), int8s
// on either side (A's or B's), the int8s at the ends of what ubFits takes
// (pairs summing to 128 in magnitude: -128 and 0, 64 and -64, 127 and 1),
// the uint8s at 0 and 255, with and without init, odd and edge M, N and
// K, K across blocks (ubKC quads) up to 4096; and ubFits refuses a pair
// past 128.
func TestUbgemmEqualsLoop(t *testing.T) {
	saved, savedVNNI := igWidth, ubVNNI
	defer func() { igWidth, ubVNNI = saved, savedVNNI }()
	assert.True(t, ubFits(4, func(p int) int32 { return []int32{-128, 0, 64, -64}[p] }))
	assert.True(t, ubFits(3, func(p int) int32 { return []int32{127, 1, -128}[p] }))
	assert.False(t, ubFits(2, func(p int) int32 { return []int32{65, -64}[p] }))
	assert.False(t, ubFits(1, func(p int) int32 { return 128 }))
	pairs := [][2]int8{{-128, 0}, {64, -64}, {127, 1}, {-1, -127}, {0, 0}, {3, -5}}
	for _, width := range simdWidths() {
		igWidth, ubVNNI = min(width, 8), savedVNNI && width == 16
		t.Run(fmt.Sprintf("lanes=%d,vnni=%v", igWidth, ubVNNI), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(15, 16))
			shapes := [][3]int{{1, 1, 1}, {4, 16, 4}, {3, 17, 3}, {5, 15, 255}, {13, 40, 256}, {8, 32, 257}, {7, 33, 302}, {1, 50, 4096}, {9, 16, 4093}, {16, 64, 1030}, {17, 65, 33}, {24, 96, 4}}
			for _, s := range shapes {
				for _, aSigned := range []bool{true, false} {
					m, n, k := s[0], s[1], s[2]
					// The int8 side: rows of k (A's) or columns of k (B's), pairs from pairs.
					sv := func(rows int) [][]int8 {
						v := make([][]int8, rows)
						for i := range v {
							v[i] = make([]int8, k)
							for p := 0; p < k; p += 2 {
								pr := pairs[rng.IntN(len(pairs))]
								v[i][p] = pr[0]
								if p+1 < k {
									v[i][p+1] = pr[1]
								}
							}
						}
						return v
					}
					uv := func(rows int) [][]uint8 {
						v := make([][]uint8, rows)
						for i := range v {
							v[i] = make([]uint8, k)
							for p := range v[i] {
								v[i][p] = []uint8{0, 255, uint8(rng.IntN(256))}[rng.IntN(3)]
							}
						}
						return v
					}
					var av, bv func(i, p int) int32 // A's row i, B's column j, value p
					pa, pb := make([]byte, ubASize(m, k)), make([]byte, ubBSize(k, n))
					if aSigned {
						as, bu := sv(m), uv(n)
						av, bv = func(i, p int) int32 { return int32(as[i][p]) }, func(j, p int) int32 { return int32(bu[j][p]) }
						ubPackA(pa, m, k, func(i, p int) byte { return byte(as[i][p]) })
						x := make([]byte, k*n) // B's rows, for ubPackBAt
						offs := make([]int, k)
						for p := range k {
							offs[p] = p * n
							for j := range n {
								x[p*n+j] = bu[j][p]
							}
						}
						ubPackBAt(pb, x, offs, k, n)
					} else {
						au, bs := uv(m), sv(n)
						av, bv = func(i, p int) int32 { return int32(au[i][p]) }, func(j, p int) int32 { return int32(bs[j][p]) }
						x := make([]byte, m*k)
						for i := range m {
							copy(x[i*k:], au[i])
						}
						ubPackARows(pa, x, k, m, k, false)
						ubPackB(pb, k, n, func(p, j int) byte { return byte(bs[j][p]) })
					}
					var init []int32
					if !aSigned {
						init = make([]int32, (n+ubCols-1)/ubCols*ubCols)
						for j := range init {
							init[j] = rng.Int32N(1<<20) - 1<<19
						}
					}
					ldc := n + 2
					c := make([]int32, m*ldc)
					for i := range c {
						c[i] = -7
					}
					ubgemm(pa, m, pb, n, ubQuadsOf(k), c, ldc, init, aSigned)
					for i := range m {
						for j := range n {
							var sum int64
							if init != nil {
								sum = int64(init[j])
							}
							for p := range k {
								sum += int64(av(i, p)) * int64(bv(j, p))
							}
							require.Equal(t, sum, int64(c[i*ldc+j]), "m %d n %d k %d aSigned %v: C[%d][%d]", m, n, k, aSigned, i, j)
						}
						for j := n; j < ldc && i*ldc+j < len(c); j++ {
							require.Equal(t, int32(-7), c[i*ldc+j], "written past row %d", i)
						}
					}
				}
			}
		})
	}
}

// BenchmarkIntKernels times igemm and ubgemm on ResNet's 3x3 layer of 64
// channels (W 64 x 576 by a chunk of 224 positions, panels packed) and
// reports their multiply-adds a second (GMAC/s) and their share of the
// float32 FMA loop's multiply-adds measured in the same run
// (internal/peak: peak_share; above 1, more integer multiply-adds than the
// FMA unit's float ones).
func BenchmarkIntKernels(b *testing.B) {
	m, n, k := 64, 224, 576
	rng := rand.New(rand.NewPCG(17, 18))
	pa, pb := make([]int16, igASize(m, k)), make([]int16, igBSize(k, n))
	ua, ub := make([]byte, ubASize(m, k)), make([]byte, ubBSize(k, n))
	for _, s := range [][]int16{pa, pb} {
		for i := range s {
			s[i] = int16(rng.IntN(511) - 255)
		}
	}
	for i := range ua {
		ua[i] = byte(int8(rng.IntN(128) - 64))
	}
	for i := range ub {
		ub[i] = byte(rng.IntN(256))
	}
	c := make([]int32, m*n)
	fmaPerSecond := peak.FMA(1, 300*time.Millisecond).PerSecond / 2
	report := func(b *testing.B) {
		rate := float64(m*n*k) * float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(rate/1e9, "GMAC/s")
		b.ReportMetric(rate/fmaPerSecond, "peak_share")
	}
	b.Run("igemm", func(b *testing.B) {
		for range b.N {
			igemm(pa, m, pb, n, igPairsOf(k), c, n)
		}
		report(b)
	})
	b.Run("ubgemm", func(b *testing.B) {
		for range b.N {
			ubgemm(ua, m, ub, n, ubQuadsOf(k), c, n, nil, true)
		}
		report(b)
	})
}
