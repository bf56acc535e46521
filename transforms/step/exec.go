package step

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/runtime/backend"
)

// Exec is the resolved implementation a step's DoFn carries (its exported
// fields are serialized with the DoFn), plus the step's metrics.
type Exec struct {
	Step string
	Impl backend.Kind
	// Fallback is set when the GPU was chosen by --backend=auto: a batch
	// whose GPU op cannot be had (ErrGPUUnavailable) runs on the CPU, and
	// the step's gpu_fallbacks metric counts it.
	Fallback bool

	fn, cpu any
	m       metrics
}

// ErrGPUUnavailable is wrapped by GPU implementations when no executor can
// run the batch (none found, or it keeps dying): under --backend=auto the
// batch then runs on the CPU.
var ErrGPUUnavailable = errors.New("GPU unavailable")

type metrics struct {
	batches, items, bytes, failures, fallbacks beam.Counter
	kernel                                     beam.Distribution
}

// Namespace is the Beam metrics namespace of every step counter.
const Namespace = "beamgpu"

// Metric names, each prefixed by the step name and a dot: "ndvi.items".
const (
	MetricBatches  = "batches"
	MetricItems    = "items"
	MetricBytes    = "bytes"
	MetricFailures = "failures"
	MetricFallback = "gpu_fallbacks"
	MetricKernelNS = "kernel_ns"
)

// Setup finds the implementation; call it from the DoFn's Setup.
func (e *Exec) Setup() error {
	fn, err := Impl(e.Step, e.Impl)
	if err != nil {
		return err
	}
	e.fn = fn
	if e.Impl == backend.GPU && e.Fallback {
		if e.cpu, err = Impl(e.Step, backend.CPU); err != nil {
			return err
		}
	}
	p := e.Step + "."
	e.m = metrics{
		batches:   beam.NewCounter(Namespace, p+MetricBatches),
		items:     beam.NewCounter(Namespace, p+MetricItems),
		bytes:     beam.NewCounter(Namespace, p+MetricBytes),
		failures:  beam.NewCounter(Namespace, p+MetricFailures),
		fallbacks: beam.NewCounter(Namespace, p+MetricFallback),
		kernel:    beam.NewDistribution(Namespace, p+MetricKernelNS),
	}
	return nil
}

// Run applies the step to one batch: it times the implementation, updates the
// metrics, and on error (or panic) emits a Failure naming the input and
// returns ok=false.
func Run[In, Out any](ctx context.Context, e *Exec, in In, fail func(Failure)) (out Out, ok bool) {
	fn, typed := e.fn.(func(In) (Out, error))
	if !typed {
		panic(fmt.Sprintf("step %q: Exec used before Setup, or with the wrong types", e.Step))
	}
	start := time.Now()
	out, err := call(fn, in)
	if err != nil && e.cpu != nil && errors.Is(err, ErrGPUUnavailable) {
		e.m.fallbacks.Inc(ctx, 1)
		out, err = call(e.cpu.(func(In) (Out, error)), in)
	}
	e.m.kernel.Update(ctx, time.Since(start).Nanoseconds())
	e.m.batches.Inc(ctx, 1)
	if s, isSized := any(in).(Sized); isSized {
		e.m.items.Inc(ctx, int64(s.Items()))
		e.m.bytes.Inc(ctx, int64(s.Bytes()))
	}
	if err != nil {
		e.m.failures.Inc(ctx, 1)
		fail(NewFailure(e.Step, in, err))
		return out, false
	}
	return out, true
}

// Record updates the step's metrics for a batch run outside Run (a model
// called by RunInference): items and bytes in, the kernel time, and whether
// it failed.
func (e *Exec) Record(ctx context.Context, items, bytes int, took time.Duration, failed bool) {
	e.m.kernel.Update(ctx, took.Nanoseconds())
	e.m.batches.Inc(ctx, 1)
	e.m.items.Inc(ctx, int64(items))
	e.m.bytes.Inc(ctx, int64(bytes))
	if failed {
		e.m.failures.Inc(ctx, 1)
	}
}

// FellBack counts a batch that ran on the CPU because its GPU op could not
// be had (for batches run outside Run, as RunInference's).
func (e *Exec) FellBack(ctx context.Context) { e.m.fallbacks.Inc(ctx, 1) }

// call runs fn, turning a panic in a kernel into an error so one bad batch
// becomes a Failure instead of a failed bundle retried forever.
func call[In, Out any](fn func(In) (Out, error), in In) (out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(in)
}
