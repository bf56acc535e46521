package inference

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	_ "github.com/beamgpu/beamgpu/transforms/tensor/tensorbeam" // the coders of Batch and Predictions
)

// Metric names, in namespace stepbeam.Namespace, prefixed "runinference.".
const (
	MetricInferences   = "num_inferences"
	MetricFailed       = "failed_batches_counter"
	MetricBatchSize    = "inference_request_batch_size"
	MetricBatchBytes   = "inference_request_batch_byte_size"
	MetricLatencyMicro = "inference_batch_latency_micro_secs"
	MetricLoadMillis   = "load_model_latency_milli_secs"
	MetricModelBytes   = "model_byte_size"
)

func init() {
	register.DoFn4x1[context.Context, []tensor.Batch, func(tensor.Predictions), func(step.Failure), error](&runInferenceFn{})
	register.Emitter1[tensor.Predictions]()
	beam.RegisterType(reflect.TypeOf((*tensor.Predictions)(nil)).Elem())
}

// RunInference predicts every row of batches (a PCollection of tensor.Batch)
// with the model of h, and returns the predictions (tensor.Predictions, one
// per input batch, with its Source and Offset) and the batches that failed
// (step.Failure, one per input batch). Input batches are grouped by
// batch.Elements with p, so the model sees calls of an adaptive number of
// batches. The handler's step is resolved with opts like any step.
func RunInference(s beam.Scope, batches beam.PCollection, h ModelHandler, p batch.Params, opts ...step.Option) (preds, failed beam.PCollection) {
	s = s.Scope("RunInference")
	cfg, err := h.Config()
	if err != nil {
		panic(fmt.Sprintf("inference: encoding handler %s: %v", h.Key(), err))
	}
	if _, err := decodeHandler(h.Kind(), cfg); err != nil {
		panic(err.Error())
	}
	grouped := batch.Elements(s, batches, p)
	// Only the model's step is placed on GPU workers; batching is not.
	ms, d := stepbeam.ScopeOf(s, h.Step(), opts...)
	fn := &runInferenceFn{Step: h.Step().Name(), Impl: d.Impl, Fallback: d.Impl == backend.GPU && d.Requested == backend.Auto,
		Kind: h.Kind(), Config: cfg}
	return beam.ParDo2(ms, fn, grouped)
}

type runInferenceFn struct {
	// Step is the handler's step, Impl its implementation, and Fallback
	// whether a batch whose GPU cannot be had runs on the CPU (auto).
	Step     string
	Impl     backend.Kind
	Fallback bool
	Kind     string
	Config   []byte

	m stepbeam.Metrics

	model, cpuModel                        Model
	inferences, failedBatches              beam.Counter
	size, bytes, latency, load, modelBytes beam.Distribution
	loadReported                           bool
	loadTook                               time.Duration
}

func (f *runInferenceFn) Setup() error {
	f.m = stepbeam.NewMetrics(f.Step)
	h, err := decodeHandler(f.Kind, f.Config)
	if err != nil {
		return err
	}
	m, took, loaded, err := load(h, f.Impl)
	if err != nil {
		return err
	}
	f.model = m
	f.loadReported = !loaded
	f.loadTook = took
	if f.Fallback { // --backend=auto chose the GPU: keep the CPU model at hand
		if f.cpuModel, _, _, err = load(h, backend.CPU); err != nil {
			return err
		}
	}
	p := "runinference."
	f.inferences = beam.NewCounter(stepbeam.Namespace, p+MetricInferences)
	f.failedBatches = beam.NewCounter(stepbeam.Namespace, p+MetricFailed)
	f.size = beam.NewDistribution(stepbeam.Namespace, p+MetricBatchSize)
	f.bytes = beam.NewDistribution(stepbeam.Namespace, p+MetricBatchBytes)
	f.latency = beam.NewDistribution(stepbeam.Namespace, p+MetricLatencyMicro)
	f.load = beam.NewDistribution(stepbeam.Namespace, p+MetricLoadMillis)
	f.modelBytes = beam.NewDistribution(stepbeam.Namespace, p+MetricModelBytes)
	return nil
}

func (f *runInferenceFn) ProcessElement(ctx context.Context, in []tensor.Batch, emit func(tensor.Predictions), fail func(step.Failure)) error {
	if !f.loadReported { // metrics need a bundle's context: report the load once, here
		f.load.Update(ctx, f.loadTook.Milliseconds())
		f.modelBytes.Update(ctx, f.model.SizeBytes())
		f.loadReported = true
	}
	x, err := tensor.Concat(in)
	if err == nil {
		start := time.Now()
		var preds tensor.Predictions
		preds, err = f.model.Predict(f.m.WithPlacement(ctx), x)
		if err != nil && f.cpuModel != nil && errors.Is(err, step.ErrGPUUnavailable) {
			f.m.FellBack(ctx)
			preds, err = f.cpuModel.Predict(ctx, x)
		}
		took := time.Since(start)
		f.latency.Update(ctx, took.Microseconds())
		f.m.Record(ctx, x.Rows, x.Bytes(), took, err != nil)
		if err == nil {
			f.size.Update(ctx, int64(x.Rows))
			f.bytes.Update(ctx, int64(x.Bytes()))
			f.inferences.Inc(ctx, int64(x.Rows))
			for _, p := range splitPredictions(preds, in) {
				emit(p)
			}
			return nil
		}
	}
	f.failedBatches.Inc(ctx, 1)
	for _, b := range in {
		fail(step.NewFailure(f.Step, b, err))
	}
	return nil
}

// splitPredictions cuts the predictions of concatenated batches back into
// one Predictions per input batch, with its source, offset and labels.
func splitPredictions(p tensor.Predictions, in []tensor.Batch) []tensor.Predictions {
	out := make([]tensor.Predictions, len(in))
	row := 0
	for i, b := range in {
		q := tensor.Predictions{Source: b.Source, Offset: b.Offset, Labels: b.Labels, Classes: p.Classes,
			Predicted: p.Predicted[row : row+b.Rows]}
		if p.Scores != nil {
			q.Scores = p.Scores[row*p.Classes : (row+b.Rows)*p.Classes]
		}
		out[i] = q
		row += b.Rows
	}
	return out
}
