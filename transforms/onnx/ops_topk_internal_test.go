package onnx

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// topK through its heap (k well below the row) gives the k first of the
// row sorted by (value, index), largest or smallest, NaN above every
// number, on rows with ties and NaNs, inner strides above 1.
func TestTopKHeapMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 21))
	for trial := range 40 {
		outer, n, inner := 1+r.IntN(3), 40+r.IntN(300), 1+r.IntN(3)
		k := 1 + r.IntN(n/8)
		smallest := trial%2 == 1
		xs := make([]float32, outer*n*inner)
		for i := range xs {
			xs[i] = float32(r.IntN(50))
			if trial%4 >= 2 {
				xs[i] = float32(r.NormFloat64())
			}
			if r.IntN(40) == 0 {
				xs[i] = float32(math.NaN())
			}
		}
		vs, is := make([]float32, outer*k*inner), make([]int64, outer*k*inner)
		topK(xs, vs, is, outer, n, inner, k, smallest)
		for o := range outer {
			for c := range inner {
				idx := make([]int, n)
				for j := range idx {
					idx[j] = j
				}
				at := func(j int) float32 { return xs[(o*n+j)*inner+c] }
				slices.SortStableFunc(idx, func(a, b int) int {
					switch {
					case topKBefore(at(a), at(b), smallest):
						return -1
					case topKBefore(at(b), at(a), smallest):
						return 1
					}
					return 0
				})
				for j := range k {
					assert.Equal(t, int64(idx[j]), is[(o*k+j)*inner+c], "trial %d row %d,%d rank %d", trial, o, c, j)
				}
			}
		}
	}
}
