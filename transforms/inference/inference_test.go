package inference_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/beamgpu/beamgpu/runtime/backend"
	_ "github.com/beamgpu/beamgpu/stubs/tensor"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// loads counts how often the test handler's Load ran in this process.
var loads atomic.Int64

// thresholdHandler is a model that predicts class 1 for rows whose first
// value is above Threshold; it fails on rows with Cols != 2.
type thresholdHandler struct{ Threshold float32 }

func (h thresholdHandler) Kind() string            { return "threshold" }
func (h thresholdHandler) Config() ([]byte, error) { return json.Marshal(h) }
func (h thresholdHandler) Key() string             { return "threshold" }
func (h thresholdHandler) Step() step.Any          { return tensor.StepMLP }
func (h thresholdHandler) Load(backend.Kind) (inference.Model, error) {
	loads.Add(1)
	return h, nil
}
func (h thresholdHandler) SizeBytes() int64 { return 4 }
func (h thresholdHandler) Predict(_ context.Context, b tensor.Batch) (tensor.Predictions, error) {
	if b.Cols != 2 {
		return tensor.Predictions{}, errors.New("want 2 columns")
	}
	p := tensor.Predictions{Source: b.Source, Offset: b.Offset, Predicted: make([]int32, b.Rows), Classes: 2}
	for i := 0; i < b.Rows; i++ {
		if b.X[i*2] > h.Threshold {
			p.Predicted[i] = 1
		}
	}
	return p, nil
}

func init() {
	inference.Register("threshold", func(c []byte) (inference.ModelHandler, error) {
		var h thresholdHandler
		return h, json.Unmarshal(c, &h)
	})
}

func batches(n int) []tensor.Batch {
	var out []tensor.Batch
	for i := 0; i < n; i++ {
		out = append(out, tensor.Batch{Source: "src", Offset: 2 * i, Rows: 2, Cols: 2, X: []float32{float32(i), 0, 0.5, 0}})
	}
	return out
}

// Every input batch comes out once, as its own Predictions; the model is
// loaded once per process however many bundles and DoFn instances run; the
// RunInference metrics are reported.
func TestRunInference(t *testing.T) {
	loads.Store(0)
	sel := backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(tensor.StepMLP)})
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, batches(20))
	preds, failed := inference.RunInference(s, in, thresholdHandler{Threshold: 0.7}, batch.Params{MinBatchSize: 3, MaxBatchSize: 3}, step.Using(sel))
	passert.Count(s, preds, "predictions", 20)
	passert.Empty(s, failed)
	res, err := beamx.RunWithMetrics(t.Context(), p)
	require.NoError(t, err)
	assert.Equal(t, int64(1), loads.Load())

	counters := map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		counters[c.Name()] += c.Result()
	}
	assert.Equal(t, int64(40), counters["runinference."+inference.MetricInferences])
	assert.Equal(t, int64(40), counters["mlp.items"], "the handler's step metrics are fed")
	dists := map[string]int64{}
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		dists[d.Name()] += d.Result().Max
	}
	assert.Equal(t, int64(6), dists["runinference."+inference.MetricBatchSize], "3 batches of 2 rows per call")
	assert.Contains(t, dists, "runinference."+inference.MetricLoadMillis)
}

// A call that fails sends every input batch of it to failed, once.
func TestRunInferenceFailuresArePerBatch(t *testing.T) {
	bad := tensor.Batch{Source: "bad", Rows: 1, Cols: 3, X: make([]float32, 3)}
	p, s := beam.NewPipelineWithRoot()
	in := beam.Create(s, bad)
	preds, failed := inference.RunInference(s, in, thresholdHandler{}, batch.Params{MinBatchSize: 1, MaxBatchSize: 1})
	passert.Empty(s, preds)
	passert.Count(s, failed, "failed", 1)
	ptest.RunAndValidate(t, p)
}

func TestUnknownHandlerPanicsAtConstruction(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	_ = p
	assert.PanicsWithValue(t, `inference: no model handler of kind "nope" is registered`, func() {
		inference.RunInference(s, beam.Create(s, batches(1)[0]), unregistered{}, batch.Params{})
	})
}

type unregistered struct{ thresholdHandler }

func (unregistered) Kind() string { return "nope" }

func TestMLPHandlerChecksShape(t *testing.T) {
	h := inference.MLPHandler{Path: "../../pipelines/fashion/data/mlp-784-256-128-10.bgmlp", Dims: []int{784, 100, 10}}
	_, err := h.Load(backend.CPU)
	assert.ErrorContains(t, err, "784")
	h.Dims = []int{784, 256, 128, 10}
	m, err := h.Load(backend.CPU)
	require.NoError(t, err)
	assert.Greater(t, m.SizeBytes(), int64(900000))
}
