package tensorbeam_test

import (
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/beamgpu/beamgpu/transforms/tensor/tensorbeam"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { ptest.Main(m) }

func init() {
	register.Function2x0(rowsOf)
	register.Function2x0(rankedRows)
}

func rowsOf(p tensor.Predictions, emit func(string)) {
	for i, c := range p.Predicted {
		emit(fmt.Sprintf("%d:%d", p.Offset+i, c))
	}
}

func rankedRows(r tensor.Ranked, emit func(string)) {
	for i, top := range r.Top {
		emit(fmt.Sprintf("%d:%v", r.Offset+i, top))
	}
}

// The tensor steps as Beam transforms on prism, chained dense -> softmax ->
// argmax (and topk), give the MLP's own predictions.
func TestStepsOnPrism(t *testing.T) {
	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	require.NoError(t, err)
	x = x.Slice(0, 300)
	x, err = tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x)
	require.NoError(t, err)
	m, err := tensor.LoadMLP("../../../pipelines/fashion/data/mlp-784-256-128-10.bgmlp")
	require.NoError(t, err)
	direct, err := m.Predict(x)
	require.NoError(t, err)
	top, err := tensor.TopK(direct.Batch(), 2)
	require.NoError(t, err)
	var want, wantTop []any
	for i, c := range direct.Predicted {
		want = append(want, fmt.Sprintf("%d:%d", i, c))
		wantTop = append(wantTop, fmt.Sprintf("%d:%v", i, top[i]))
	}

	opt := step.Using(backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(tensorbeam.Steps...)}))
	p, s := beam.NewPipelineWithRoot()
	batches := beam.CreateList(s, x.Split(64))
	h := batches
	var failed []beam.PCollection
	for _, l := range m.Layers {
		var f beam.PCollection
		h, f = tensorbeam.DenseRows(s, h, l, opt)
		failed = append(failed, f)
	}
	probs, f1 := tensorbeam.SoftmaxRows(s, h, opt)
	preds, f2 := tensorbeam.ArgmaxRows(s, probs, opt)
	ranked, f3 := tensorbeam.TopKRows(s, probs, 2, opt)
	passert.Equals(s, beam.ParDo(s, rowsOf, preds), want...)
	passert.Equals(s, beam.ParDo(s, rankedRows, ranked), wantTop...)
	passert.Empty(s, beam.Flatten(s, append(failed, f1, f2, f3)...))
	ptest.RunAndValidate(t, p)
}

// A batch the dense layer cannot take (wrong width) fails alone, named.
func TestStepFailureIsNamed(t *testing.T) {
	opt := step.Using(backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(tensorbeam.Steps...)}))
	layer := tensor.Dense{In: 4, Out: 2, W: make([]float32, 8), B: make([]float32, 2)}
	good := tensor.Batch{Source: "f", Rows: 1, Cols: 4, X: make([]float32, 4)}
	bad := tensor.Batch{Source: "f", Offset: 1, Rows: 1, Cols: 3, X: make([]float32, 3)}
	p, s := beam.NewPipelineWithRoot()
	out, failed := tensorbeam.DenseRows(s, beam.Create(s, good, bad), layer, opt)
	passert.Count(s, out, "out", 1)
	passert.Count(s, failed, "failed", 1)
	ptest.RunAndValidate(t, p)

	_, err := tensor.DenseBatch(tensor.DenseInput{Batch: bad, Layer: layer})
	assert.ErrorContains(t, err, "f[1:2]")
}
