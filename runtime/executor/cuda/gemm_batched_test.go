//go:build cuda

package cuda

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// GemmStridedBatched computes each product of a batch as Gemm does, with a
// shared operand (stride 0) and with padded strides, in every
// transposition, against float64. (Needs a GPU, as every test here.)
func TestGemmStridedBatched(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 2))
	for _, sh := range [][4]int{{1, 1, 1, 1}, {2, 3, 4, 3}, {7, 31, 65, 5}, {64, 196, 576, 4}} {
		m, n, k, batch := sh[0], sh[1], sh[2], sh[3]
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, shareA := range []bool{false, true} {
				lda, ldb := k, n
				if tr[0] {
					lda = m
				}
				if tr[1] {
					ldb = k
				}
				sa, sb, sc := int64(m*k+3), int64(k*n+1), int64(m*n+2)
				if shareA {
					sa = 0
				}
				a, b := randomFloats(r, int(sa)*(batch-1)+m*k), randomFloats(r, int(sb)*(batch-1)+k*n)
				var c []float32
				err := dev.Launch(context.Background(), "batched gemm test", nil, func(call gpu.Call) error {
					da, err := gpu.Upload(call, a)
					if err != nil {
						return err
					}
					db, err := gpu.Upload(call, b)
					if err != nil {
						return err
					}
					dc, err := call.Alloc(4 * (sc*int64(batch-1) + int64(m*n)))
					if err != nil {
						return err
					}
					if err := call.GemmStridedBatched(tr[0], tr[1], m, n, k, da, lda, sa, db, ldb, sb, dc, n, sc, batch); err != nil {
						return err
					}
					c = make([]float32, int(sc)*(batch-1)+m*n)
					return gpu.Download(call, c, dc)
				})
				if err != nil {
					t.Fatalf("%v %v: %v", sh, tr, err)
				}
				for i := range batch {
					ai, bi, ci := a[int(sa)*i:], b[int(sb)*i:], c[int(sc)*i:]
					for row := range m {
						for col := range n {
							var want, mag float64
							for p := range k {
								x, y := float64(ai[row*lda+p]), float64(bi[p*ldb+col])
								if tr[0] {
									x = float64(ai[p*lda+row])
								}
								if tr[1] {
									y = float64(bi[col*ldb+p])
								}
								want += x * y
								mag += math.Abs(x * y)
							}
							if d := math.Abs(float64(ci[row*n+col]) - want); d > 1e-5*mag+1e-30 {
								t.Fatalf("%v %v shareA=%v: product %d C[%d][%d] = %v, want %v", sh, tr, shareA, i, row, col, ci[row*n+col], want)
							}
						}
					}
				}
			}
		}
	}
}
