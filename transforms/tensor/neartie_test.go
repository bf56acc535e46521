package tensor_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kNN comparison rule: two implementations may differ on a row only
// where its k-th and (k+1)-th neighbours are at (almost) the same distance.
func TestKNNNearTie(t *testing.T) {
	// References on a line: 0, 1, 3, and 5 and 5.00001 (a near tie at k=4),
	// labelled 0, 0, 1, 1, 2; one query at 0.
	ref := tensor.Batch{Source: "ref", Rows: 5, Cols: 1, X: []float32{0, 1, 3, 5, 5.00001}, Labels: []int32{0, 0, 1, 1, 2}}
	r, err := tensor.NewReference(ref, 3)
	require.NoError(t, err)
	q := tensor.Batch{Source: "q", Rows: 1, Cols: 1, X: []float32{0}}
	for _, k := range []int{3, 4} {
		in := tensor.KNNInput{Query: q, Ref: r, K: k, Weights: tensor.WeightUniform}
		cpu, err := tensor.KNNBatch(in)
		require.NoError(t, err)
		require.NoError(t, tensor.KNNNearTie(in, cpu, cpu), "an output agrees with itself")

		other := cpu
		other.Predicted = []int32{2}
		other.Scores = []float32{0.5, 0.25, 0.25}
		err = tensor.KNNNearTie(in, cpu, other)
		if k == 4 { // the 4th (5) and 5th (5.00001) neighbours: a near tie
			assert.NoError(t, err)
		} else { // the 3rd (3) and 4th (5): no tie
			assert.ErrorContains(t, err, "row 0: CPU predicts")
			assert.ErrorContains(t, err, "are not a near tie")
		}
		votes := cpu
		votes.Scores = append([]float32(nil), cpu.Scores...)
		votes.Scores[0] += 0.01
		if k == 3 {
			assert.Error(t, tensor.KNNNearTie(in, cpu, votes), "vote shares 0.01 apart without a tie")
		}
	}
}
