// Package tensor registers the stand-ins of the tensor steps.
//
// The steps are package transforms/tensor's; see package stubs for the
// contract the stand-ins follow. Labels, sources and offsets pass through;
// every computed number is zero.
package tensor

import (
	"github.com/beamgpu/beamgpu/transforms/step"
	ts "github.com/beamgpu/beamgpu/transforms/tensor"
)

func init() {
	step.RegisterStub(ts.StepDecode, ts.DecodeSourceHeaders)
	step.RegisterStub(ts.StepStandardize, func(in ts.StandardizeInput) (ts.Batch, error) { return zeros(in.Batch, in.Batch.Cols), nil })
	step.RegisterStub(ts.StepDense, func(in ts.DenseInput) (ts.Batch, error) { return zeros(in.Batch, in.Layer.Out), nil })
	step.RegisterStub(ts.StepSoftmax, func(b ts.Batch) (ts.Batch, error) { return zeros(b, b.Cols), nil })
	step.RegisterStub(ts.StepArgmax, func(b ts.Batch) (ts.Predictions, error) { return predictions(b, b.Cols), nil })
	step.RegisterStub(ts.StepTopK, TopK)
	step.RegisterStub(ts.StepKNN, func(in ts.KNNInput) (ts.Predictions, error) { return predictions(in.Query, in.Ref.Classes), nil })
	step.RegisterStub(ts.StepMLP, MLP)
}

// zeros is a batch of b's rows (and labels) with cols zero columns.
func zeros(b ts.Batch, cols int) ts.Batch {
	return ts.Batch{Source: b.Source, Offset: b.Offset, Rows: b.Rows, Cols: cols,
		X: make([]float32, b.Rows*cols), Labels: copyLabels(b.Labels)}
}

// predictions predicts class 0 with zero scores for every row of b.
func predictions(b ts.Batch, classes int) ts.Predictions {
	return ts.Predictions{Source: b.Source, Offset: b.Offset, Labels: copyLabels(b.Labels),
		Predicted: make([]int32, b.Rows), Scores: make([]float32, b.Rows*classes), Classes: classes}
}

func copyLabels(l []int32) []int32 {
	if l == nil {
		return nil
	}
	return append([]int32(nil), l...)
}

// TopK is the topk step's stand-in: class 0 k times for every row.
func TopK(in ts.TopKInput) (ts.Ranked, error) {
	top := make([][]int32, in.Batch.Rows)
	for i := range top {
		top[i] = make([]int32, in.K)
	}
	return ts.Ranked{Source: in.Batch.Source, Offset: in.Batch.Offset, Top: top}, nil
}

// MLP is the mlp step's stand-in: class 0 for every row, with zero scores
// over the model's classes.
func MLP(in ts.MLPInput) (ts.Predictions, error) {
	dims := in.Model.Dims()
	return predictions(in.Batch, dims[len(dims)-1]), nil
}
