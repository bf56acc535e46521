package inference

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
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
	// MetricBadRows counts the examples refused before the model ran
	// (Model.Check: a missing input, a wrong type or shape, a NaN).
	MetricBadRows = "bad_rows"
	// MetricRetries counts the calls of the model on half of a call that
	// failed: a failed call of several examples is retried in halves,
	// down to single examples, so that only the examples that fail alone
	// fail, each with its own reason.
	MetricRetries = "split_retries"
	// MetricTokens and MetricPaddedTokens count, for a model whose rows
	// are padded (PadRows), the tokens of the rows of successful calls
	// (their size along the dynamic axes of the model's first input that
	// has one) and the tokens of the calls as padded (rows x padded size):
	// padding's share is 1 - tokens/padded_tokens.
	MetricTokens       = "tokens"
	MetricPaddedTokens = "padded_tokens"
)

func init() {
	register.DoFn4x1[context.Context, []Example, func(Result), func(step.Failure), error](&runInferenceFn{})
	register.Emitter1[Result]()
}

// RunInference runs the model of h on every example (a PCollection of
// Example) and returns the results (Result, one per example, with its key,
// source, index, carried arrays and the model's ID) and the failures
// (step.Failure, one per failed example: one the model refused (Check),
// or one the model failed on alone). A call of several examples that
// fails (an error or a panic in the model) is retried on each half of
// them, down to single examples, so that one bad example (an index out of
// range, a value the model cannot take) fails alone with its own reason
// while the others of its batch get their results; the retries are
// counted (MetricRetries). A call that failed because its GPU could not be
// had, or whose context is done, is not retried. Examples are grouped by
// batch.Elements with p, so that each call of the model is large enough to
// amortise its fixed cost, where the model is Batched; else each runs
// alone. The handler's step is resolved with opts like any step (the
// backend selector: CPU, GPU or stub, and on the GPU under --backend=auto
// a batch whose GPU cannot be had runs on the CPU). It panics, as
// beam.ParDo does, where TryRunInference returns an error.
func RunInference(s beam.Scope, examples beam.PCollection, h Handler, p batch.Params, opts ...step.Option) (results, failed beam.PCollection) {
	results, failed, err := TryRunInference(s, examples, h, p, opts...)
	if err != nil {
		panic(err.Error())
	}
	return results, failed
}

// TryRunInference is RunInference, returning an error where RunInference
// panics: a handler that does not encode or whose kind is not registered,
// batching parameters that are not valid, or a step the selector cannot
// resolve (a stub not imported, a step the pipeline did not declare, a GPU
// requested for a model that cannot run there, naming why). A program
// returns it from its Build, before anything runs.
func TryRunInference(s beam.Scope, examples beam.PCollection, h Handler, p batch.Params, opts ...step.Option) (results, failed beam.PCollection, err error) {
	return runInference(s, examples, h, func(s beam.Scope) (beam.PCollection, error) {
		return batch.TryElements(s, examples, p)
	}, opts...)
}

// runInference runs h on the batches group makes of examples (in the
// RunInference scope).
func runInference(s beam.Scope, examples beam.PCollection, h Handler, group func(beam.Scope) (beam.PCollection, error), opts ...step.Option) (results, failed beam.PCollection, err error) {
	if h == nil {
		return results, failed, errors.New("inference: RunInference: no handler")
	}
	cfg, err := h.Config()
	if err != nil {
		return results, failed, fmt.Errorf("inference: encoding handler %s: %w", h.Key(), err)
	}
	if _, err := decodeHandler(h.Kind(), cfg); err != nil {
		return results, failed, err
	}
	st := h.Step()
	d, err := step.Resolve(st, opts...)
	if err != nil {
		return results, failed, err
	}
	s = s.Scope("RunInference")
	grouped, err := group(s)
	if err != nil {
		return results, failed, err
	}
	// Only the model's step is placed on GPU workers; batching is not.
	ms, _ := stepbeam.ScopeOf(s, st, opts...)
	fn := &runInferenceFn{Step: st.Name(), Impl: d.Impl, Fallback: d.Impl == backend.GPU && d.Requested == backend.Auto,
		Kind: h.Kind(), Config: cfg}
	results, failed = beam.ParDo2(ms, fn, grouped)
	return results, failed, nil
}

// runInferenceFn checks the examples of a batch, runs the model on the
// good ones and emits a Result or a failure for each.
type runInferenceFn struct {
	// Step is the handler's step, Impl its implementation, and Fallback
	// whether a call whose GPU cannot be had runs on the CPU (auto).
	Step     string
	Impl     backend.Kind
	Fallback bool
	// Kind and Config are the handler.
	Kind   string
	Config []byte

	model    Model
	m        stepbeam.Metrics
	loadTook time.Duration
	reported bool

	inferences, failedBatches, badRows     beam.Counter
	retries                                beam.Counter
	size, bytes, latency, load, modelBytes beam.Distribution
}

func (f *runInferenceFn) Setup(ctx context.Context) error {
	h, err := decodeHandler(f.Kind, f.Config)
	if err != nil {
		return err
	}
	m, took, loaded, err := load(ctx, h)
	if err != nil {
		return err
	}
	f.model, f.loadTook, f.reported = m, took, !loaded
	f.m = stepbeam.NewMetrics(f.Step)
	p := "runinference."
	f.inferences = beam.NewCounter(stepbeam.Namespace, p+MetricInferences)
	f.failedBatches = beam.NewCounter(stepbeam.Namespace, p+MetricFailed)
	f.badRows = beam.NewCounter(stepbeam.Namespace, p+MetricBadRows)
	f.retries = beam.NewCounter(stepbeam.Namespace, p+MetricRetries)
	f.size = beam.NewDistribution(stepbeam.Namespace, p+MetricBatchSize)
	f.bytes = beam.NewDistribution(stepbeam.Namespace, p+MetricBatchBytes)
	f.latency = beam.NewDistribution(stepbeam.Namespace, p+MetricLatencyMicro)
	f.load = beam.NewDistribution(stepbeam.Namespace, p+MetricLoadMillis)
	f.modelBytes = beam.NewDistribution(stepbeam.Namespace, p+MetricModelBytes)
	return nil
}

func (f *runInferenceFn) ProcessElement(ctx context.Context, in []Example, emit func(Result), fail func(step.Failure)) error {
	if !f.reported { // metrics need a bundle's context: report the load once, here
		f.load.Update(ctx, f.loadTook.Milliseconds())
		f.modelBytes.Update(ctx, f.model.SizeBytes())
		f.reported = true
	}
	good := make([]Example, 0, len(in))
	for _, e := range in {
		if err := f.model.Check(e); err != nil {
			f.badRows.Inc(ctx, 1)
			fail(failure(f.Step, e.Key, e.Source, e.Index, err))
			continue
		}
		good = append(good, e)
	}
	if len(good) == 0 {
		return nil
	}
	if !f.model.Batched() {
		for i := range good {
			f.call(ctx, good[i:i+1], emit, fail)
		}
		return nil
	}
	f.call(ctx, good, emit, fail)
	return nil
}

// call runs the model on ex and emits a result per example. A call that
// fails is retried on each half of ex, down to single examples, so that
// an example fails only with the error of a call of its own; a call that
// failed as a whole (its GPU could not be had, its context is done) fails
// every example of ex.
func (f *runInferenceFn) call(ctx context.Context, ex []Example, emit func(Result), fail func(step.Failure)) {
	bytes := 0
	for _, e := range ex {
		bytes += e.Bytes()
	}
	start := time.Now()
	callCtx := ctx
	if f.Impl == backend.GPU {
		callCtx = f.m.WithPlacement(ctx)
	}
	outs, err := f.predict(callCtx, f.Impl, ex)
	if err != nil && f.Fallback && errors.Is(err, step.ErrGPUUnavailable) {
		f.m.FellBack(ctx)
		outs, err = f.predict(ctx, backend.CPU, ex)
	}
	if err == nil && len(outs) != len(ex) {
		err = fmt.Errorf("the model returned outputs for %d of %d examples", len(outs), len(ex))
	}
	took := time.Since(start)
	f.latency.Update(ctx, took.Microseconds())
	f.m.Record(ctx, len(ex), bytes, took, err != nil)
	if err != nil {
		f.failedBatches.Inc(ctx, 1)
		if len(ex) > 1 && !errors.Is(err, step.ErrGPUUnavailable) && ctx.Err() == nil {
			half := len(ex) / 2
			f.retries.Inc(ctx, 2)
			f.call(ctx, ex[:half], emit, fail)
			f.call(ctx, ex[half:], emit, fail)
			return
		}
		for _, e := range ex {
			fail(failure(f.Step, e.Key, e.Source, e.Index, err))
		}
		return
	}
	f.size.Update(ctx, int64(len(ex)))
	f.bytes.Update(ctx, int64(bytes))
	f.inferences.Inc(ctx, int64(len(ex)))
	id := f.model.ID()
	for i, e := range ex {
		emit(Result{Key: e.Key, Source: e.Source, Index: e.Index, ModelID: id, Outputs: outs[i], Carry: e.Carry})
	}
}

// predict calls the model, turning a panic in it into an error, so that
// one bad batch becomes failures instead of a failed bundle retried
// forever.
func (f *runInferenceFn) predict(ctx context.Context, impl backend.Kind, ex []Example) (outs [][]Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f.model.Predict(ctx, impl, ex)
}
