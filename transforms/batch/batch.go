package batch

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// Namespace is the Beam metrics namespace of the batch metrics.
const Namespace = "beamgpu"

// Metric names.
const (
	MetricBatches  = "batch.batches"  // counter: batches emitted
	MetricElements = "batch.elements" // counter: elements emitted in batches
	MetricSize     = "batch.size"     // distribution: elements per batch
)

var (
	batchesCounter  = beam.NewCounter(Namespace, MetricBatches)
	elementsCounter = beam.NewCounter(Namespace, MetricElements)
	sizeDist        = beam.NewDistribution(Namespace, MetricSize)
)

func init() {
	register.DoFn4x0[context.Context, beam.EventTime, beam.T, func(beam.EventTime, []beam.T)]((*elementsFn)(nil))
	register.Emitter2[beam.EventTime, []beam.T]()
	register.Function2x0(unbatchFn)
	register.Emitter1[beam.T]()
}

// Elements batches the elements of col, a PCollection<T>, into a
// PCollection<[]T> of batches whose size adapts to the downstream cost (see
// the package documentation). Every element is in exactly one batch. col
// must be in the global window and T must not be a KV.
//
// Elements panics, as beam.ParDo does, if p is invalid or col cannot be
// batched; TryElements returns the error instead.
func Elements(s beam.Scope, col beam.PCollection, p Params) beam.PCollection {
	out, err := TryElements(s, col, p)
	if err != nil {
		panic(err)
	}
	return out
}

// TryElements is Elements, returning an error where Elements panics.
func TryElements(s beam.Scope, col beam.PCollection, p Params) (beam.PCollection, error) {
	p, err := p.normalize()
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("batch.Elements: %w", err)
	}
	if !col.IsValid() {
		return beam.PCollection{}, fmt.Errorf("batch.Elements: invalid input PCollection")
	}
	if t := col.Type(); t.Class() == typex.Composite {
		return beam.PCollection{}, fmt.Errorf("batch.Elements: input must not be a KV or grouped PCollection, got %v; wrap the pair in a struct", t)
	}
	if ws := col.WindowingStrategy(); ws != nil && ws.Fn != nil && ws.Fn.Kind != window.GlobalWindows {
		return beam.PCollection{}, fmt.Errorf("batch.Elements: input must be in the global window, got %v windows: "+
			"a Go DoFn emits from FinishBundle only into the global window; batch windowed data per key with the SDK's batch.GroupIntoBatches", ws.Fn)
	}
	s = s.Scope("batch.Elements")
	outs, err := beam.TryParDo(s, &elementsFn{Params: p}, col)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("batch.Elements: %w", err)
	}
	return outs[0], nil
}

// Unbatch is the inverse of Elements: it emits every element of every
// batch of col, a PCollection<[]T>, as a PCollection<T>. The elements have
// the timestamp of their batch. It panics if col is not a PCollection of
// slices.
func Unbatch(s beam.Scope, col beam.PCollection) beam.PCollection {
	if !col.IsValid() || col.Type().Class() != typex.Container || col.Type().Type().Kind() != reflect.Slice {
		panic(fmt.Sprintf("batch.Unbatch: input must be a PCollection of slices, got %v", col.Type()))
	}
	s = s.Scope("batch.Unbatch")
	return beam.ParDo(s, unbatchFn, col)
}

func unbatchFn(batch []beam.T, emit func(beam.T)) {
	for _, e := range batch {
		emit(e)
	}
}

// elementsFn buffers the elements of a bundle and emits them in batches of
// the size its Estimator proposes, timing each emit; FinishBundle emits the
// rest. Batches carry the latest timestamp of their elements.
type elementsFn struct {
	// Params are normalized.
	Params Params `json:"params"`

	est    *Estimator
	target int            // size of the batch being filled
	buf    []beam.T       // the batch being filled; a new slice per batch
	ts     beam.EventTime // latest timestamp in buf
	now    func() time.Time
}

func (f *elementsFn) Setup() error {
	est, err := NewEstimator(f.Params)
	if err != nil {
		return err
	}
	f.est = est
	if f.now == nil {
		f.now = time.Now
	}
	return nil
}

// StartBundle takes the emitter only because Beam requires the emitters of
// ProcessElement in StartBundle and FinishBundle alike.
func (f *elementsFn) StartBundle(_ func(beam.EventTime, []beam.T)) {
	f.buf = nil
	f.target = f.est.Next()
	f.est.IgnoreNext()
}

func (f *elementsFn) ProcessElement(ctx context.Context, ts beam.EventTime, elm beam.T, emit func(beam.EventTime, []beam.T)) {
	if f.buf == nil {
		f.buf = make([]beam.T, 0, f.target)
		f.ts = mtime.MinTimestamp
	}
	f.buf = append(f.buf, elm)
	f.ts = max(f.ts, ts)
	if len(f.buf) >= f.target {
		f.flush(ctx, emit)
		f.target = f.est.Next()
	}
}

func (f *elementsFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, []beam.T)) {
	if len(f.buf) > 0 {
		f.flush(ctx, emit)
	}
}

// flush emits the batch, timing the emit: in a fused stage the downstream
// DoFns run inside it.
func (f *elementsFn) flush(ctx context.Context, emit func(beam.EventTime, []beam.T)) {
	b := f.buf
	f.buf = nil // downstream may keep b
	start := f.now()
	emit(f.ts, b)
	f.est.Record(len(b), f.now().Sub(start))
	batchesCounter.Inc(ctx, 1)
	elementsCounter.Inc(ctx, int64(len(b)))
	sizeDist.Update(ctx, int64(len(b)))
}
