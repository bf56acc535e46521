package inference

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// planBatches sorts a window by length (stably) and cuts it into batches
// by size and by padded tokens, a longer row alone.
func TestPlanBatches(t *testing.T) {
	for _, c := range []struct {
		name         string
		lengths      []int
		size, tokens int
		want         [][]int
	}{
		{"sorted", []int{5, 1, 3, 2}, 2, 0, [][]int{{1, 3}, {2, 0}}},
		{"stable", []int{4, 2, 4, 2}, 4, 0, [][]int{{1, 3, 0, 2}}},
		{"tokens", []int{10, 1, 1, 1, 9}, 10, 20, [][]int{{1, 2, 3}, {4, 0}}},
		{"padded, not summed", []int{2, 2, 2, 8}, 10, 16, [][]int{{0, 1, 2}, {3}}},
		{"long row alone", []int{3, 50, 3}, 10, 12, [][]int{{0, 2}, {1}}},
		{"one", []int{7}, 1, 1, [][]int{{0}}},
		{"none", nil, 4, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, planBatches(c.lengths, c.size, c.tokens))
		})
	}
}

// Over random windows: every row once, batches in length order, each within
// its size and (but a lone row) its token budget.
func TestPlanBatchesProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		lengths := make([]int, r.IntN(300))
		for i := range lengths {
			lengths[i] = 1 + r.IntN(128)
		}
		size, tokens := 1+r.IntN(64), r.IntN(2000)
		seen := make([]bool, len(lengths))
		prev := 0
		for _, b := range planBatches(lengths, size, tokens) {
			require.NotEmpty(t, b)
			require.LessOrEqual(t, len(b), size)
			longest := 0
			for _, i := range b {
				require.False(t, seen[i], "row %d twice", i)
				seen[i] = true
				require.GreaterOrEqual(t, lengths[i], prev, "rows out of length order")
				prev = lengths[i]
				longest = max(longest, lengths[i])
			}
			if tokens > 0 && len(b) > 1 {
				require.LessOrEqual(t, len(b)*longest, tokens)
			}
		}
		for i, ok := range seen {
			require.True(t, ok, "row %d lost", i)
		}
	}
}

// Sorting within a window wastes less padding than batching in input order.
func TestPlanBatchesSortingSavesPadding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lengths := make([]int, 1024)
	for i := range lengths {
		lengths[i] = 1 + r.IntN(256)
	}
	padded := func(batches [][]int) int {
		n := 0
		for _, b := range batches {
			longest := 0
			for _, i := range b {
				longest = max(longest, lengths[i])
			}
			n += len(b) * longest
		}
		return n
	}
	real := 0
	for _, l := range lengths {
		real += l
	}
	sorted := padded(planBatches(lengths, 32, 0))
	var inOrder [][]int
	for lo := 0; lo < len(lengths); lo += 32 {
		var b []int
		for i := lo; i < min(lo+32, len(lengths)); i++ {
			b = append(b, i)
		}
		inOrder = append(inOrder, b)
	}
	assert.Less(t, float64(sorted-real)/float64(sorted), 0.05)
	assert.Greater(t, float64(padded(inOrder)-real)/float64(padded(inOrder)), 0.3)
}

// copyBlock puts a block at the origin of a larger array and takes it out.
func TestCopyBlock(t *testing.T) {
	big := make([]byte, 3*4)
	copyBlock(big, []int{3, 4}, []byte{1, 2, 3, 4, 5, 6}, []int{2, 3}, 1, true)
	assert.Equal(t, []byte{1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0}, big)
	small := make([]byte, 6)
	copyBlock(big, []int{3, 4}, small, []int{2, 3}, 1, false)
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6}, small)
	three := make([]byte, 2*2*3*2)
	copyBlock(three, []int{2, 2, 3}, []byte{1, 0, 2, 0, 3, 0, 4, 0}, []int{1, 2, 2}, 2, true)
	assert.Equal(t, []byte{1, 0, 2, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, three)
}
