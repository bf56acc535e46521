package tensor

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handSet is a 2-D reference set: class 0 around (0,0), class 1 around
// (10,0), class 2 around (0,10).
func handSet() Batch {
	return Batch{Source: "hand", Rows: 9, Cols: 2, X: []float32{
		0, 0, 1, 0, 0, 1,
		10, 0, 11, 0, 10, 1,
		0, 10, 1, 10, 0, 11,
	}, Labels: []int32{0, 0, 0, 1, 1, 1, 2, 2, 2}}
}

func TestKNNHandMade(t *testing.T) {
	ref, err := NewReference(handSet(), 3)
	require.NoError(t, err)
	q := Batch{Source: "q", Rows: 4, Cols: 2, X: []float32{0.2, 0.2, 9, 1, 1, 9, 5, 0}, Labels: []int32{0, 1, 2, -1}}
	p, err := KNN(q, ref, 3, WeightUniform)
	require.NoError(t, err)
	assert.Equal(t, []int32{0, 1, 2}, p.Predicted[:3], "clusters")
	assert.Equal(t, []int32{0, 1, 2, -1}, p.Labels)
	assert.Equal(t, 3, p.Classes)
	assert.Equal(t, []float32{1, 0, 0}, p.Scores[:3])
	// (5,0): squared distances 25, 16, 26 to class 0 and 25, 36, 26 to
	// class 1. The 4 nearest: index 1 (16), then the tie at 25 in index
	// order (0, then 3), then the tie at 26 (index 2 before 5). With k=3:
	// two votes for class 0, one for class 1.
	idx, dist, err := Neighbors(q.Slice(3, 4), ref, 4)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 0, 3, 2}, idx)
	assert.Equal(t, []float32{16, 25, 25, 26}, dist)
	assert.Equal(t, int32(0), p.Predicted[3])
	acc, n := p.Accuracy()
	assert.Equal(t, 3, n)
	assert.Equal(t, 1.0, acc)
}

func TestKNNTieBreaks(t *testing.T) {
	// Query at the origin, reference points: class 1 at distance 1 and 3,
	// class 0 at distance 2 and 2. k=4, uniform: 2 votes each, class 1 sums
	// distances 4, class 0 sums 4: tie -> lower class index 0.
	ref, err := NewReference(Batch{Source: "r", Rows: 4, Cols: 1, X: []float32{1, 3, -2, 2}, Labels: []int32{1, 1, 0, 0}}, 2)
	require.NoError(t, err)
	q := Batch{Source: "q", Rows: 1, Cols: 1, X: []float32{0}}
	p, err := KNN(q, ref, 4, WeightUniform)
	require.NoError(t, err)
	assert.Equal(t, int32(0), p.Predicted[0])
	// Move one class-1 point nearer: sums 1+2.5 < 4: class 1 wins on distance.
	ref, err = NewReference(Batch{Source: "r", Rows: 4, Cols: 1, X: []float32{1, 2.5, -2, 2}, Labels: []int32{1, 1, 0, 0}}, 2)
	require.NoError(t, err)
	p, err = KNN(q, ref, 4, WeightUniform)
	require.NoError(t, err)
	assert.Equal(t, int32(1), p.Predicted[0])
	assert.Equal(t, []float32{0.5, 0.5}, p.Scores)
	// Distance weights: 1/1 + 1/2.5 = 1.4 for class 1, 1/2+1/2 = 1 for class 0.
	p, err = KNN(q, ref, 4, WeightDistance)
	require.NoError(t, err)
	assert.Equal(t, int32(1), p.Predicted[0])
	assert.InDelta(t, 1.4/2.4, p.Scores[1], 1e-6)
	// Equal weights: lower class index.
	ref, err = NewReference(Batch{Source: "r", Rows: 2, Cols: 1, X: []float32{1, -1}, Labels: []int32{1, 0}}, 2)
	require.NoError(t, err)
	p, err = KNN(q, ref, 2, WeightDistance)
	require.NoError(t, err)
	assert.Equal(t, int32(0), p.Predicted[0])
}

type naiveNeighbor struct {
	d   float64
	idx int
}

// naiveKNN is the O(n*m) definition: exact distances in float64, a full sort
// by (distance, index), the same voting rules as KNN.
func naiveKNN(q, ref Batch, classes, k int, weights string) ([]int32, []float32) {
	pred := make([]int32, q.Rows)
	scores := make([]float32, q.Rows*classes)
	for i := 0; i < q.Rows; i++ {
		nb := make([]naiveNeighbor, ref.Rows)
		for j := range nb {
			var s float64
			for c := 0; c < q.Cols; c++ {
				d := float64(q.X[i*q.Cols+c]) - float64(ref.X[j*ref.Cols+c])
				s += d * d
			}
			nb[j] = naiveNeighbor{s, j}
		}
		sort.Slice(nb, func(a, b int) bool {
			if nb[a].d != nb[b].d {
				return nb[a].d < nb[b].d
			}
			return nb[a].idx < nb[b].idx
		})
		votes := make([]float64, classes)
		sumd := make([]float64, classes)
		var total float64
		for _, n := range nb[:k] {
			c := ref.Labels[n.idx]
			d := math.Sqrt(n.d)
			w := 1.0
			if weights == WeightDistance {
				w = 1 / (d + 1e-12)
			}
			votes[c] += w
			sumd[c] += d
			total += w
		}
		best := 0
		for c := 1; c < classes; c++ {
			if votes[c] > votes[best] || (votes[c] == votes[best] && weights == WeightUniform && votes[c] > 0 && sumd[c] < sumd[best]) {
				best = c
			}
		}
		pred[i] = int32(best)
		for c := range votes {
			scores[i*classes+c] = float32(votes[c] / total)
		}
	}
	return pred, scores
}

// intBatch has small integer values, so that float32 distances are exact and
// ties (equal distances, equal votes) are frequent: KNN must then agree with
// the naive definition exactly, tie-breaks included.
func intBatch(r *rand.Rand, rows, cols, classes int) Batch {
	b := Batch{Source: "int", Rows: rows, Cols: cols, X: make([]float32, rows*cols), Labels: make([]int32, rows)}
	for i := range b.X {
		b.X[i] = float32(r.IntN(4))
	}
	for i := range b.Labels {
		b.Labels[i] = int32(r.IntN(classes))
	}
	return b
}

func TestKNNMatchesNaive(t *testing.T) {
	// Small blocks so that queries and references span several blocks and
	// several workers.
	defer func(q, r, w int) { knnQueryBlock, knnRefBlock, knnWorkers = q, r, w }(knnQueryBlock, knnRefBlock, knnWorkers)
	knnQueryBlock, knnRefBlock, knnWorkers = 7, 50, 3

	r := rand.New(rand.NewPCG(3, 4))
	const classes = 5
	refB := intBatch(r, 301, 12, classes)
	q := intBatch(r, 97, 12, classes)
	ref, err := NewReference(refB, classes)
	require.NoError(t, err)
	for _, weights := range []string{WeightUniform, WeightDistance} {
		for _, k := range []int{1, 4, 7, 301} {
			p, err := KNN(q, ref, k, weights)
			require.NoError(t, err)
			pred, scores := naiveKNN(q, refB, classes, k, weights)
			assert.Equal(t, pred, p.Predicted, "%s k=%d", weights, k)
			assert.Equal(t, scores, p.Scores, "%s k=%d", weights, k)
		}
	}
}

func TestKNNRandomFloatMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const classes = 10
	refB := randBatch(r, 2000, 64)
	refB.Labels = make([]int32, refB.Rows)
	for i := range refB.Labels {
		refB.Labels[i] = int32(r.IntN(classes))
	}
	q := randBatch(r, 300, 64)
	ref, err := NewReference(refB, classes)
	require.NoError(t, err)
	p, err := KNN(q, ref, 5, WeightUniform)
	require.NoError(t, err)
	pred, _ := naiveKNN(q, refB, classes, 5, WeightUniform)
	assert.Equal(t, pred, p.Predicted)
}

func TestKNNErrors(t *testing.T) {
	ref, err := NewReference(handSet(), 3)
	require.NoError(t, err)
	q := Batch{Source: "q", Rows: 1, Cols: 2, X: []float32{0, 0}}
	_, err = KNN(q, ref, 10, WeightUniform)
	assert.EqualError(t, err, "q[0:1]: k=10: want 1..9 (the reference set size)")
	_, err = KNN(q, ref, 1, "cosine")
	assert.EqualError(t, err, `q[0:1]: unknown kNN weights "cosine" (want "uniform" or "distance")`)
	_, err = KNN(Batch{Source: "q", Rows: 1, Cols: 3, X: []float32{0, 0, 0}}, ref, 1, WeightUniform)
	assert.EqualError(t, err, "q[0:1]: queries have 3 columns, the reference set 2")
	_, err = KNN(Batch{Source: "q", Offset: 7, Rows: 1, Cols: 2, X: []float32{0, float32(math.NaN())}}, ref, 1, WeightUniform)
	assert.EqualError(t, err, "q: row 7 column 1: value is NaN")
	_, err = KNN(q, &Reference{}, 1, WeightUniform)
	assert.Error(t, err)

	h := handSet()
	h.Labels[4] = 3
	_, err = NewReference(h, 3)
	assert.EqualError(t, err, "hand: row 4: label 3 is not in [0, 3)")
	h.Labels = nil
	_, err = NewReference(h, 3)
	assert.EqualError(t, err, "hand[0:9]: a reference set needs labels")
}
