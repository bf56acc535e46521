package inference

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kNN handlers of a process share one reference set per files and
// scaling, whatever their k and weighting: it is read once (and on the GPU
// sent once, being one pointer); another scaling reads its own.
func TestKNNReferenceOncePerProcess(t *testing.T) {
	src := tensor.Source{Images: tensor.SampleImagesPath(), Labels: tensor.SampleLabelsPath(), Classes: 10}
	unit := KNNScaler(tensor.Scaler{Mode: tensor.ScaleUnit})
	ref := func(k int, opts ...KNNOption) *tensor.Reference {
		h, err := KNN(src, k, opts...)
		require.NoError(t, err)
		m, err := h.Load(t.Context())
		require.NoError(t, err)
		return m.(knnModel).ref
	}
	a := ref(1, unit)
	assert.Same(t, a, ref(5, unit, KNNWeights(tensor.WeightDistance)))
	assert.NotSame(t, a, ref(1))
	assert.Equal(t, 10000, a.Rows)
	assert.InDelta(t, 1.0, maxOf(a.X), 1e-6, "scaled to [0, 1]")
}

func maxOf(x []float32) float32 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	return m
}
