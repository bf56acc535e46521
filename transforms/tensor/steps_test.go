package tensor_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBatchCoderRoundTrip(t *testing.T) {
	b := tensor.Batch{Source: "s", Offset: 7, Rows: 2, Cols: 2, X: []float32{1, 2, 3, 4}, Labels: []int32{-1, 3}}
	data, err := tensor.EncodeBatch(b)
	require.NoError(t, err)
	back, err := tensor.DecodeBatch(data)
	require.NoError(t, err)
	assert.Equal(t, b, back)
	b.Labels = nil
	data, err = tensor.EncodeBatch(b)
	require.NoError(t, err)
	back, err = tensor.DecodeBatch(data)
	require.NoError(t, err)
	assert.Nil(t, back.Labels)
	_, err = tensor.DecodeBatch(data[:len(data)-2])
	assert.Error(t, err)

	p := tensor.Predictions{Source: "s", Offset: 1, Labels: []int32{2}, Predicted: []int32{2}, Scores: []float32{0.5, 0.5}, Classes: 2}
	data, err = tensor.EncodePredictions(p)
	require.NoError(t, err)
	pb, err := tensor.DecodePredictions(data)
	require.NoError(t, err)
	assert.Equal(t, p, pb)
}

func TestConcat(t *testing.T) {
	a := tensor.Batch{Source: "s", Rows: 1, Cols: 2, X: []float32{1, 2}, Labels: []int32{0}}
	b := tensor.Batch{Source: "s", Offset: 1, Rows: 2, Cols: 2, X: []float32{3, 4, 5, 6}, Labels: []int32{1, 2}}
	c, err := tensor.Concat([]tensor.Batch{a, b})
	require.NoError(t, err)
	assert.Equal(t, tensor.Batch{Source: "s", Rows: 3, Cols: 2, X: []float32{1, 2, 3, 4, 5, 6}, Labels: []int32{0, 1, 2}}, c)
	_, err = tensor.Concat([]tensor.Batch{a, {Source: "t", Rows: 1, Cols: 3, X: make([]float32, 3)}})
	assert.ErrorContains(t, err, "has 3 columns")
}
