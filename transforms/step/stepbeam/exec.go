package stepbeam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamruntime "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // local paths
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*step.Failure)(nil)).Elem())
	register.Emitter1[step.Failure]()
	// On a worker, the job's GPU sharing (how many SDK processes share the
	// GPU, set by the launcher) arrives as a pipeline option; the executor
	// this process starts is configured with it.
	client.SetSharingSource(func() string { return beamruntime.GlobalOptions.Get(client.OptionSharing) })
	// Steps read files through package files: in a Beam binary, through
	// Beam's filesystems (local, gs://, memfs://, whatever the binary links).
	files.Register("", Filesystems{})
}

// Filesystems is package files' default filesystem in a Beam binary: Beam's
// filesystems (local, gs://, memfs://, whatever the binary links). A program
// may register a faster one for a scheme (the pipelines read Cloud Storage
// at offsets with ranged reads), embedding this one for the rest.
type Filesystems struct{}

// OpenRead implements files.FS. A local path (no scheme://) is opened by
// files.Local, which refuses what is not a regular file (a named pipe
// would block the open forever).
func (Filesystems) OpenRead(ctx context.Context, path string) (io.ReadCloser, error) {
	if !strings.Contains(path, "://") {
		return files.Local{}.OpenRead(ctx, path)
	}
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := fsys.OpenRead(ctx, path)
	if err != nil {
		fsys.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &fsReader{ReadCloser: r, fsys: fsys}, nil
}

// OpenAt implements files.FS. A local path (no scheme://) is opened as a
// file and read at offsets directly (files.Local). Any other path is read
// at offsets through the stream Beam's filesystems give, reopened where a
// read goes back (files.StreamAt): Beam's filesystems offer no ranged
// reads, so a stream reopened at an offset reads the bytes before it again.
// Reading a full-size scene's 256 windows so spent 5.8 of its 17 s in
// reading bytes to skip them.
func (Filesystems) OpenAt(ctx context.Context, path string) (files.File, error) {
	if !strings.Contains(path, "://") {
		return files.Local{}.OpenAt(ctx, path)
	}
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	size, err := fsys.Size(ctx, path)
	if err != nil {
		fsys.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	open := func(off int64) (io.ReadCloser, error) {
		r, err := fsys.OpenRead(ctx, path)
		if err != nil {
			return nil, err
		}
		if _, err := io.CopyN(io.Discard, r, off); err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
	return files.StreamAt(open, size, fsys.Close), nil
}

// List implements files.FS.
func (Filesystems) List(ctx context.Context, glob string) ([]string, error) {
	fsys, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", glob, err)
	}
	defer fsys.Close()
	return fsys.List(ctx, glob)
}

// fsReader closes the filesystem with the file.
type fsReader struct {
	io.ReadCloser
	fsys filesystem.Interface
}

func (r *fsReader) Close() error { return errors.Join(r.ReadCloser.Close(), r.fsys.Close()) }

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
	MetricRecycled = "recycled"
)

// Per-device metrics of a GPU step, named "STEP.deviceN.METRIC" (N the
// device's ordinal in its executor, as client.Placement gives it): the
// batches the executor ran there, their bytes (inputs and outputs) and the
// time they ran there (summed over batches). A worker with several GPUs
// spreads a step's batches over them; these say how evenly.
const (
	MetricDevicePrefix  = "device"
	MetricDeviceBatches = "batches"
	MetricDeviceBytes   = "bytes"
	MetricDeviceBusyNS  = "busy_ns"
)

// DeviceMetric is the name of a step's per-device metric.
func DeviceMetric(step string, device int, metric string) string {
	return fmt.Sprintf("%s.%s%d.%s", step, MetricDevicePrefix, device, metric)
}

// Exec is a step's resolved implementation, as a DoFn carries it (its
// exported fields are serialized with the DoFn), with the step's metrics.
type Exec[In, Out any] struct {
	Step string
	Impl backend.Kind
	// Fallback is set when the GPU was chosen by --backend=auto: a batch
	// whose GPU op cannot be had (step.ErrGPUUnavailable) runs on the CPU,
	// and the step's gpu_fallbacks metric counts it.
	Fallback bool

	s  *step.Step[In, Out]
	fn func(context.Context, In) (Out, error)
	m  Metrics
}

// Metrics are a step's Beam metrics.
type Metrics struct {
	batches, items, bytes, failures, fallbacks, recycled beam.Counter
	kernel                                               beam.Distribution
	step                                                 string
}

// WithPlacement returns ctx, for a call of the step's GPU implementation,
// such that each batch the executor runs is counted on its device (Placed)
// in ctx's metrics.
func (m Metrics) WithPlacement(ctx context.Context) context.Context {
	return client.WithPlacement(ctx, func(p client.Placement) { m.Placed(ctx, p) })
}

// Placed counts a batch the executor ran on a device (client.Placement).
func (m Metrics) Placed(ctx context.Context, p client.Placement) {
	if m.step == "" {
		return
	}
	beam.NewCounter(Namespace, DeviceMetric(m.step, p.Device, MetricDeviceBatches)).Inc(ctx, 1)
	beam.NewCounter(Namespace, DeviceMetric(m.step, p.Device, MetricDeviceBytes)).Inc(ctx, p.Bytes)
	beam.NewCounter(Namespace, DeviceMetric(m.step, p.Device, MetricDeviceBusyNS)).Inc(ctx, p.Busy.Nanoseconds())
}

// NewMetrics returns the metrics of the step called name; call it from a
// DoFn's Setup.
func NewMetrics(name string) Metrics {
	p := name + "."
	return Metrics{
		batches:   beam.NewCounter(Namespace, p+MetricBatches),
		items:     beam.NewCounter(Namespace, p+MetricItems),
		bytes:     beam.NewCounter(Namespace, p+MetricBytes),
		failures:  beam.NewCounter(Namespace, p+MetricFailures),
		fallbacks: beam.NewCounter(Namespace, p+MetricFallback),
		recycled:  beam.NewCounter(Namespace, p+MetricRecycled),
		kernel:    beam.NewDistribution(Namespace, p+MetricKernelNS),
		step:      name,
	}
}

// Record updates the metrics for one batch: items and bytes in, the time in
// the implementation, and whether it failed.
func (m Metrics) Record(ctx context.Context, items, bytes int, took time.Duration, failed bool) {
	m.kernel.Update(ctx, took.Nanoseconds())
	m.batches.Inc(ctx, 1)
	m.items.Inc(ctx, int64(items))
	m.bytes.Inc(ctx, int64(bytes))
	if failed {
		m.failures.Inc(ctx, 1)
	}
}

// FellBack counts a batch that ran on the CPU because its GPU op could not
// be had.
func (m Metrics) FellBack(ctx context.Context) { m.fallbacks.Inc(ctx, 1) }

// NewExec resolves s (with the selector of opts) into the Exec its DoFn
// carries. It panics, as beam.ParDo does on an invalid DoFn, when the
// implementation cannot be had or the pipeline did not declare the step.
func NewExec[In, Out any](s *step.Step[In, Out], opts ...step.Option) Exec[In, Out] {
	d, err := step.Resolve(s, opts...)
	if err != nil {
		panic(err.Error())
	}
	return Exec[In, Out]{Step: s.Name(), Impl: d.Impl, Fallback: d.Impl == backend.GPU && d.Requested == backend.Auto}
}

// Setup finds the implementation and the metrics; call it from the DoFn's
// Setup.
func (e *Exec[In, Out]) Setup() error {
	a, ok := step.Lookup(e.Step)
	if !ok {
		return fmt.Errorf("step %q is not registered in this binary: import its family", e.Step)
	}
	s, ok := a.(*step.Step[In, Out])
	if !ok {
		return fmt.Errorf("step %q is not a step from %T to %T", e.Step, *new(In), *new(Out))
	}
	e.s = s
	fn, err := s.ImplContext(e.Impl)
	if err != nil {
		return err
	}
	e.fn = fn
	e.m = NewMetrics(e.Step)
	return nil
}

// Run applies the step to one batch: it times the implementation, updates
// the metrics, and on error (or panic) emits a Failure naming the input and
// returns ok=false. ctx reaches the GPU executor call (cancellation).
func (e *Exec[In, Out]) Run(ctx context.Context, in In, fail func(step.Failure)) (out Out, ok bool) {
	out, ok, _ = e.run(ctx, in, fail)
	return out, ok
}

// run is Run, and says whether the CPU implementation made out (for
// recycle). Like Run, it changes nothing in e: DoFns may call it from
// several goroutines.
func (e *Exec[In, Out]) run(ctx context.Context, in In, fail func(step.Failure)) (out Out, ok, cpu bool) {
	if e.fn == nil {
		panic(fmt.Sprintf("step %q: Exec used before Setup", e.Step))
	}
	start := time.Now()
	callCtx := ctx
	if e.Impl == backend.GPU {
		callCtx = e.m.WithPlacement(ctx)
	}
	out, err := e.call(callCtx, in)
	cpu = e.Impl == backend.CPU
	if err != nil && e.Fallback && errors.Is(err, step.ErrGPUUnavailable) {
		e.m.FellBack(ctx)
		out, err = step.Call(e.s.Def().CPU, in)
		cpu = true
	}
	// An input that does not say its size (step.Sized) counts as one item
	// of unknown bytes, so that the metrics count what went through.
	items, bytes := 1, 0
	if s, sized := any(in).(step.Sized); sized {
		items, bytes = s.Items(), s.Bytes()
	}
	e.m.Record(ctx, items, bytes, time.Since(start), err != nil)
	if err != nil {
		fail(step.NewFailure(e.Step, in, err))
		return out, false, cpu
	}
	return out, true, cpu
}

func (e *Exec[In, Out]) call(ctx context.Context, in In) (out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return e.fn(ctx, in)
}

// recycle hands out back to the step (Def.Recycle) if the CPU
// implementation made it (run's cpu); the caller has emitted it and the
// pipeline has said that its consumers keep none (step.RecycleOutputs).
func (e *Exec[In, Out]) recycle(ctx context.Context, out Out, cpu bool) {
	if r := e.s.Def().Recycle; r != nil && cpu {
		r(out)
		e.m.recycled.Inc(ctx, 1)
	}
}
