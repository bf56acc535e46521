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

// topK32 (float32 through keys, its heap's scan in AVX2 where the CPU has
// it) gives what sorting each row stably by (value, index) gives, at each
// vector width: largest and smallest, rows of few distinct values (ties),
// NaN, -0 and +0, infinities, k from 0 to the row's length on both sides
// of the heap's threshold, inner strides above 1, and empty rows and
// tensors.
func TestTopK32MatchesSort(t *testing.T) {
	defer func(w int) { topKWidth = w }(topKWidth)
	r := rand.New(rand.NewPCG(28, 32))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, width := range simdWidths() {
		if width > 8 {
			continue
		}
		topKWidth = width
		for trial := range 200 {
			outer, n, inner := r.IntN(4), r.IntN(600), 1+r.IntN(3)
			if trial%5 == 0 {
				inner = 1
			}
			k := r.IntN(n + 1)
			if trial%2 == 0 {
				k = r.IntN(n/8 + 1) // the heap
			}
			smallest := trial%3 == 1
			xs := make([]float32, outer*n*inner)
			for i := range xs {
				switch v := r.IntN(60); {
				case v == 0:
					xs[i] = nan
				case v == 1:
					xs[i] = float32(math.Copysign(0, -1))
				case v == 2:
					xs[i] = inf
				case v == 3:
					xs[i] = -inf
				case trial%4 >= 2:
					xs[i] = float32(r.NormFloat64())
				default:
					xs[i] = float32(r.IntN(20) - 10)
				}
			}
			vs, is := make([]float32, outer*k*inner), make([]int64, outer*k*inner)
			topK32(xs, vs, is, outer, n, inner, k, smallest)
			for o := range outer {
				for c := range inner {
					at := func(j int) float32 { return xs[(o*n+j)*inner+c] }
					idx := make([]int, n)
					for j := range idx {
						idx[j] = j
					}
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
						o := (o*k+j)*inner + c
						assert.Equal(t, int64(idx[j]), is[o], "width %d trial %d row %d,%d rank %d", width, trial, o, c, j)
						assert.Equal(t, math.Float32bits(at(idx[j])), math.Float32bits(vs[o]), "width %d trial %d value", width, trial)
					}
				}
			}
		}
	}
}

// topKScan at each vector width finds the first element not at or below
// (above, with smallest) the threshold, NaN included, at every offset of
// rows of every length up to a few vectors.
func TestTopKScan(t *testing.T) {
	defer func(w int) { topKWidth = w }(topKWidth)
	r := rand.New(rand.NewPCG(28, 33))
	nan := float32(math.NaN())
	for _, width := range simdWidths() {
		if width > 8 {
			continue
		}
		topKWidth = width
		for trial := range 2000 {
			row := make([]float32, r.IntN(80))
			for i := range row {
				row[i] = float32(r.IntN(10))
				if r.IntN(100) == 0 {
					row[i] = nan
				}
			}
			thr := float32(r.IntN(12))
			if trial%50 == 0 {
				thr = nan
			}
			for _, smallest := range []bool{false, true} {
				want := len(row)
				for i, v := range row {
					if smallest && !(v >= thr) || !smallest && !(v <= thr) {
						want = i
						break
					}
				}
				assert.Equal(t, want, topKScan(row, thr, smallest), "width %d trial %d smallest %v", width, trial, smallest)
			}
		}
	}
}
