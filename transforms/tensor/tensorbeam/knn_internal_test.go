package tensorbeam

import (
	"context"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The DoFn instances of one kNN application in a process share one
// reference set: the first builds it from the side input, the others do not
// read the side input at all; another application builds its own.
func TestKNNReferenceBuiltOncePerApplication(t *testing.T) {
	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	require.NoError(t, err)
	x, err = tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x.Slice(0, 200))
	require.NoError(t, err)
	parts := x.Split(50)
	reads := 0
	side := func() func(*tensor.Batch) bool {
		i := 0
		return func(b *tensor.Batch) bool {
			reads++
			if i == len(parts) {
				return false
			}
			*b = parts[i]
			i++
			return true
		}
	}
	opt := step.Using(backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(tensor.StepKNN)}))
	instance := func(refID string) *knnFn {
		f := &knnFn{Exec: stepbeam.NewExec(tensor.StepKNN, opt), K: 1, Weights: tensor.WeightUniform, Classes: 10, RefID: refID}
		require.NoError(t, f.Setup())
		return f
	}
	classify := func(f *knnFn) tensor.Predictions {
		var got []tensor.Predictions
		f.ProcessElement(context.Background(), parts[1], side(), func(p tensor.Predictions) { got = append(got, p) },
			func(fl step.Failure) { t.Fatalf("failed: %v", fl) })
		require.Len(t, got, 1)
		return got[0]
	}

	a, b := instance("application-1"), instance("application-1")
	pa := classify(a)
	built := reads
	assert.Equal(t, len(parts)+1, built, "the first instance reads the whole side input once")
	pb := classify(b)
	assert.Equal(t, built, reads, "the second instance of the application builds nothing")
	assert.Same(t, a.ref.ref, b.ref.ref)
	assert.Equal(t, pa, pb)
	for i, c := range pa.Predicted {
		assert.Equal(t, parts[1].Labels[i], c, "row %d is its own nearest neighbour", i)
	}

	c := instance("application-2")
	classify(c)
	assert.Equal(t, 2*built, reads, "another application builds its own")
	assert.NotSame(t, a.ref.ref, c.ref.ref)
}
