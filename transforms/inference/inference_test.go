package inference_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/beamgpu/beamgpu/runtime/backend"
	_ "github.com/beamgpu/beamgpu/stubs/tensor"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// loads counts how often the test handler's Load ran in this process.
var loads atomic.Int64

// thresholdHandler is a model of one input "v" (float32[2]) and one output
// "above" (int32 scalar: whether v[0] > Threshold). It refuses an example
// without "v"; a call with an example whose v[1] is 99 fails; on the GPU
// (the mlp step's GPU implementation), GPU fails every call as the
// executor would.
type thresholdHandler struct {
	Threshold float32
	GPU       string // "gone": every GPU call fails with step.ErrGPUUnavailable
	// Run, where set, makes the handler's key (and so its loaded model)
	// its own: a test that counts loads is not served a model an earlier
	// run of it loaded in this process (go test -count=N).
	Run int64
}

// runs hands out Run values.
var runs atomic.Int64

func (h thresholdHandler) Kind() string            { return "threshold" }
func (h thresholdHandler) Config() ([]byte, error) { return json.Marshal(h) }
func (h thresholdHandler) Key() string {
	return fmt.Sprintf("threshold:%g:%s:%d", h.Threshold, h.GPU, h.Run)
}
func (h thresholdHandler) Step() step.Any { return tensor.StepMLP }
func (h thresholdHandler) Load(context.Context) (inference.Model, error) {
	loads.Add(1)
	return h, nil
}
func (h thresholdHandler) ID() string       { return "threshold" }
func (h thresholdHandler) SizeBytes() int64 { return 4 }
func (h thresholdHandler) Batched() bool    { return true }
func (h thresholdHandler) Check(e inference.Example) error {
	if _, ok := e.Input("v"); !ok {
		return errors.New(`no input "v"`)
	}
	return nil
}

func (h thresholdHandler) Predict(_ context.Context, impl backend.Kind, ex []inference.Example) ([][]inference.Tensor, error) {
	if impl == backend.GPU && h.GPU == "gone" {
		return nil, fmt.Errorf("executor: %w", step.ErrGPUUnavailable)
	}
	out := make([][]inference.Tensor, len(ex))
	for i, e := range ex {
		v, _ := e.Input("v")
		x := nd.MustAs[float32](v)
		if x[1] == 99 {
			return nil, errors.New("99 is not a value")
		}
		above := int32(0)
		if x[0] > h.Threshold {
			above = 1
		}
		out[i] = []inference.Tensor{{Name: "above", Array: nd.Scalar(above)}}
	}
	return out, nil
}

func init() {
	inference.Register("threshold", func(c []byte) (inference.Handler, error) {
		var h thresholdHandler
		return h, json.Unmarshal(c, &h)
	})
	register.Function1x1(describe)
	register.Function1x1(failureInput)
}

// describe writes a result as "ID model: name=values ... | carried".
func describe(r inference.Result) string {
	s := r.ID() + " " + r.ModelID + ":"
	for _, t := range r.Outputs {
		s += fmt.Sprintf(" %s=%v", t.Name, nd.Float64s(t.Array))
	}
	for _, t := range r.Carry {
		s += fmt.Sprintf(" | %s=%v", t.Name, nd.Float64s(t.Array))
	}
	return s
}

func failureInput(f step.Failure) string {
	return fmt.Sprintf("%s %s %d %s", f.Input, f.Step, f.Items, f.Key)
}

// examples are n examples of source "src", v = [i, 0], the label i%2
// carried.
func examples(n int) []inference.Example {
	var out []inference.Example
	for i := 0; i < n; i++ {
		out = append(out, inference.Example{Source: "src", Index: int64(i),
			Inputs: []inference.Tensor{{Name: "v", Array: nd.Of([]float32{float32(i), 0})}},
			Carry:  []inference.Tensor{{Name: "label", Array: nd.Scalar(int32(i % 2))}}})
	}
	return out
}

func cpu() step.Option {
	return step.Using(backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(tensor.StepMLP)}))
}

// Every example comes out once, with its source, index, carried arrays and
// the model's ID; the model is loaded once per process however many
// bundles and DoFn instances run; the RunInference metrics and the
// handler's step metrics are reported.
func TestRunInference(t *testing.T) {
	loads.Store(0)
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, examples(20))
	h := thresholdHandler{Threshold: 9.5, Run: runs.Add(1)}
	res, failed := inference.RunInference(s, in, h, batch.Params{MinBatchSize: 3, MaxBatchSize: 3}, cpu())
	var want []any
	for i := 0; i < 20; i++ {
		above := 0
		if i > 9 {
			above = 1
		}
		want = append(want, fmt.Sprintf("src[%d] threshold: above=[%d] | label=[%d]", i, above, i%2))
	}
	passert.Equals(s, beam.ParDo(s, describe, res), want...)
	passert.Empty(s, failed)
	pr, err := beamx.RunWithMetrics(t.Context(), p)
	require.NoError(t, err)
	assert.Equal(t, int64(1), loads.Load())

	counters := map[string]int64{}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		counters[c.Name()] += c.Result()
	}
	assert.Equal(t, int64(20), counters["runinference."+inference.MetricInferences])
	assert.Equal(t, int64(20), counters["mlp.items"], "the handler's step metrics are fed")
	dists := map[string]int64{}
	for _, d := range pr.Metrics().AllMetrics().Distributions() {
		dists[d.Name()] = max(dists[d.Name()], d.Result().Max)
	}
	assert.Equal(t, int64(3), dists["runinference."+inference.MetricBatchSize], "3 examples per call")
	assert.Equal(t, int64(24), dists["runinference."+inference.MetricBatchBytes], "3 examples of 8 bytes")
	assert.Contains(t, dists, "runinference."+inference.MetricLoadMillis)
	assert.Equal(t, int64(4), dists["runinference."+inference.MetricModelBytes])
}

// An example the model refuses fails alone (bad_rows), the rest of its
// batch runs; a call that fails is retried in halves, so that only the
// example that fails alone fails, and the others of its call (2 and 3)
// get their results; each failure is one record of its source; results
// plus failures are the examples. The calls [2 3 4], [3 4] and [4] fail
// (failed_batches_counter 3), the halves [2], [3 4], [3] and [4] are the
// retries (split_retries 4).
func TestRunInferenceFailures(t *testing.T) {
	ex := examples(6)
	ex[1].Inputs[0].Name = "w"                           // refused by Check
	ex[5].Key, ex[5].Inputs = "five", ex[5].Inputs[:0:0] // refused, named by its key
	ex[4].Inputs[0].Array = nd.Of([]float32{4, 99})      // fails its call, with 2 and 3 at first
	p, s := beam.NewPipelineWithRoot()
	three := batch.Params{MinBatchSize: 3, MaxBatchSize: 3}
	res, failed := inference.RunInference(s, beam.CreateList(s, []inference.Example{ex[0], ex[1], ex[5]}), thresholdHandler{}, three, cpu())
	res2, failed2 := inference.RunInference(s.Scope("call"), beam.CreateList(s, ex[2:5]), thresholdHandler{}, three, cpu())
	passert.Equals(s, beam.ParDo(s, describe, res), "src[0] threshold: above=[0] | label=[0]")
	passert.Equals(s, beam.ParDo(s, describe, res2), "src[2] threshold: above=[1] | label=[0]", "src[3] threshold: above=[1] | label=[1]")
	passert.Equals(s, beam.ParDo(s, failureInput, beam.Flatten(s, failed, failed2)),
		"src[1] mlp 1 src", "five mlp 1 src", "src[4] mlp 1 src")
	pr, err := beamx.RunWithMetrics(t.Context(), p)
	require.NoError(t, err)
	counters := map[string]int64{}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		counters[c.Name()] += c.Result()
	}
	assert.Equal(t, int64(2), counters["runinference."+inference.MetricBadRows])
	assert.Equal(t, int64(3), counters["runinference."+inference.MetricFailed])
	assert.Equal(t, int64(4), counters["runinference."+inference.MetricRetries])
	assert.Equal(t, int64(3), counters["runinference."+inference.MetricInferences])
}

type gpuPresent struct{}

func (gpuPresent) Available() (bool, string) { return true, "" }

// Under --backend=auto a call whose GPU cannot be had runs on the CPU,
// counted in the step's gpu_fallbacks; under --backend=gpu it fails.
func TestRunInferenceGPUFallback(t *testing.T) {
	h := thresholdHandler{Threshold: 1, GPU: "gone"}
	for _, c := range []struct {
		kind              backend.Kind
		results, failures int
	}{{backend.Auto, 4, 0}, {backend.GPU, 0, 4}} {
		sel := backend.MustNew(backend.Config{Default: c.kind, Steps: step.Backends(tensor.StepMLP), Executor: gpuPresent{}})
		p, s := beam.NewPipelineWithRoot()
		res, failed := inference.RunInference(s, beam.CreateList(s, examples(4)), h, batch.Params{MaxBatchSize: 2}, step.Using(sel))
		passert.Count(s, res, "results", c.results)
		passert.Count(s, failed, "failures", c.failures)
		pr, err := beamx.RunWithMetrics(t.Context(), p)
		require.NoError(t, err, c.kind)
		var fallbacks int64
		for _, m := range pr.Metrics().AllMetrics().Counters() {
			if m.Name() == "mlp.gpu_fallbacks" {
				fallbacks += m.Result()
			}
		}
		assert.Equal(t, c.kind == backend.Auto, fallbacks > 0, c.kind)
		assert.Equal(t, backend.GPU, sel.Report().Decisions[0].Impl)
	}
}

type unregistered struct{ thresholdHandler }

func (unregistered) Kind() string { return "nope" }

// A handler that is not registered, or a step the pipeline does not
// declare, is an error of TryRunInference and a panic of RunInference,
// before anything runs.
func TestRunInferenceRefusesAtConstruction(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, examples(1))
	_, _, err := inference.TryRunInference(s, col, unregistered{}, batch.Params{})
	assert.EqualError(t, err, `inference: no model handler of kind "nope" is registered`)
	assert.PanicsWithValue(t, `inference: no model handler of kind "nope" is registered`, func() {
		inference.RunInference(s, col, unregistered{}, batch.Params{})
	})
	other := step.Using(backend.MustNew(backend.Config{Steps: step.Backends(tensor.StepKNN)}))
	_, _, err = inference.TryRunInference(s, col, thresholdHandler{}, batch.Params{}, other)
	assert.ErrorContains(t, err, `step "mlp" is not one of this pipeline's steps (knn)`)
	_, _, err = inference.TryRunInference(s, col, thresholdHandler{}, batch.Params{MinBatchSize: 5, MaxBatchSize: 2}, cpu())
	assert.ErrorContains(t, err, "batch.Elements")
}

// Example, Result and Classification cross Beam's coders whole.
func TestCoders(t *testing.T) {
	e := examples(3)[2]
	e.Key = "k"
	got, err := inference.DecodeExample(inference.EncodeExample(e))
	require.NoError(t, err)
	assert.Equal(t, e, got)
	r := inference.Result{Key: "k", Source: "s", Index: 7, ModelID: "sha256:00", Outputs: e.Inputs, Carry: e.Carry}
	gr, err := inference.DecodeResult(inference.EncodeResult(r))
	require.NoError(t, err)
	assert.Equal(t, r, gr)
	_, err = inference.DecodeResult(inference.EncodeResult(r)[:5])
	assert.Error(t, err)
	c := inference.Classification{Key: "k", Source: "s", Index: 7, ModelID: "m", Carry: e.Carry,
		Top: []inference.Class{{Index: 3, Label: "Dress", Score: 0.25}, {Index: 1}}}
	gc, err := inference.DecodeClassification(inference.EncodeClassification(c))
	require.NoError(t, err)
	assert.Equal(t, c, gc)
	assert.Equal(t, "k", c.ID())
}
