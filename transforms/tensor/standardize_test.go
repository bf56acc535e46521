package tensor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScalerUnit(t *testing.T) {
	b := Batch{Source: "s", Rows: 1, Cols: 3, X: []float32{0, 51, 255}, Labels: []int32{4}}
	out, err := Scaler{Mode: ScaleUnit}.Apply(b)
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 0.2, 1}, out.X)
	assert.Equal(t, []int32{4}, out.Labels)
	assert.Equal(t, float32(51), b.X[1], "input untouched")
}

func TestScalerZScore(t *testing.T) {
	b := Batch{Source: "s", Rows: 4, Cols: 2, X: []float32{1, 7, 2, 7, 3, 7, 4, 7}}
	s := FitScaler(b)
	assert.Equal(t, ScaleZScore, s.Mode)
	assert.InDeltaSlice(t, []float32{2.5, 7}, s.Mean, 1e-6)
	assert.InDelta(t, math.Sqrt(1.25), s.Std[0], 1e-6)
	assert.Equal(t, float32(StdFloor), s.Std[1], "constant column floored")
	out, err := s.Apply(b)
	require.NoError(t, err)
	var mean, sq float64
	for i := 0; i < 4; i++ {
		v := float64(out.X[2*i])
		mean += v / 4
		sq += v * v / 4
		assert.Equal(t, float32(0), out.X[2*i+1])
	}
	assert.InDelta(t, 0, mean, 1e-6)
	assert.InDelta(t, 1, sq, 1e-5)
}

func TestScalerErrors(t *testing.T) {
	s := Scaler{Mode: ScaleZScore, Mean: []float32{0, 0}, Std: []float32{1, 1}}
	_, err := s.Apply(Batch{Source: "f", Offset: 10, Rows: 1, Cols: 3, X: []float32{1, 2, 3}})
	assert.EqualError(t, err, "f[10:11]: scaler has 2 means and 2 stds, the batch has 3 columns")
	_, err = s.Apply(Batch{Source: "f", Offset: 10, Rows: 2, Cols: 2, X: []float32{1, 2, 3, float32(math.NaN())}})
	assert.EqualError(t, err, "f: row 11 column 1: value is NaN")
	_, err = Scaler{Mode: "minmax"}.Apply(Batch{Source: "f", Rows: 1, Cols: 1, X: []float32{1}})
	assert.EqualError(t, err, `f[0:1]: unknown scaler mode "minmax" (want "unit" or "zscore")`)
}
