package inference

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// Defaults of LengthBatching.
const (
	DefaultLengthBatchSize = 256
	DefaultLengthWindow    = 1024
)

// LengthBatching groups examples of different lengths (token sequences)
// into the batches of RunInferenceByLength: the examples of a bundle are
// taken Window at a time, sorted by length (stably: equal lengths keep
// their order), and cut, in that order, into batches of at most
// MaxBatchSize examples whose examples x longest example is at most
// MaxBatchTokens, so that the rows of a batch have near lengths and
// padding them to the longest wastes little. An example longer than
// MaxBatchTokens alone is a batch of its own. An example's length is the
// largest size of its inputs' first axis (a row [sequence] or [sequence,
// features]; 1 for scalars). Results come out in the order of the sorted
// batches: Result.Index restores the input's.
//
// This is Beam Python's SortAndBatchElements (sorting by size within a
// bundle, batches split by max_batch_weight) with the weight of a batch
// the padded one, its rows x its longest row, which is what a padded model
// call computes, rather than the sum of its elements' sizes.
type LengthBatching struct {
	// MaxBatchSize is the most examples of a batch; 0 means 256.
	MaxBatchSize int
	// MaxBatchTokens bounds examples x longest example per batch; 0: no
	// bound but MaxBatchSize.
	MaxBatchTokens int
	// Window is how many examples are sorted together; 0 means 1024. A
	// worker holds a window's examples at most; 1 batches in input order.
	Window int
}

func (p LengthBatching) normalize() (LengthBatching, error) {
	if p.MaxBatchSize < 0 || p.MaxBatchTokens < 0 || p.Window < 0 {
		return p, fmt.Errorf("inference: LengthBatching %+v: negative sizes", p)
	}
	if p.MaxBatchSize == 0 {
		p.MaxBatchSize = DefaultLengthBatchSize
	}
	if p.Window == 0 {
		p.Window = DefaultLengthWindow
	}
	return p, nil
}

// planBatches cuts examples of the given lengths (one window, in input
// order) into batches: positions in lengths, sorted by length, each batch
// at most maxSize long and, with maxTokens > 0, at most maxTokens in
// length x longest (a longer example alone is a batch).
func planBatches(lengths []int, maxSize, maxTokens int) [][]int {
	order := make([]int, len(lengths))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return lengths[order[a]] < lengths[order[b]] })
	var out [][]int
	var cur []int
	longest := 0
	for _, i := range order {
		l := max(longest, lengths[i])
		if len(cur) > 0 && (len(cur)+1 > maxSize || (maxTokens > 0 && (len(cur)+1)*l > maxTokens)) {
			out = append(out, cur)
			cur, l = nil, lengths[i]
		}
		cur = append(cur, i)
		longest = l
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// exampleLength is an example's length for LengthBatching.
func exampleLength(e Example) int {
	n := 1
	for _, t := range e.Inputs {
		if len(t.Array.Shape) > 0 {
			n = max(n, t.Array.Shape[0])
		}
	}
	return n
}

// RunInferenceByLength is RunInference with the examples grouped by
// length (LengthBatching) instead of by the adaptive batch size, for rows
// of different lengths that the handler pads (PadRows). It panics where
// TryRunInferenceByLength returns an error.
func RunInferenceByLength(s beam.Scope, examples beam.PCollection, h Handler, p LengthBatching, opts ...step.Option) (results, failed beam.PCollection) {
	results, failed, err := TryRunInferenceByLength(s, examples, h, p, opts...)
	if err != nil {
		panic(err.Error())
	}
	return results, failed
}

// TryRunInferenceByLength is RunInferenceByLength, returning an error
// where it panics: as TryRunInference, and LengthBatching that is not
// valid.
func TryRunInferenceByLength(s beam.Scope, examples beam.PCollection, h Handler, p LengthBatching, opts ...step.Option) (results, failed beam.PCollection, err error) {
	p, err = p.normalize()
	if err != nil {
		return results, failed, err
	}
	return runInference(s, examples, h, func(s beam.Scope) (beam.PCollection, error) {
		return beam.ParDo(s.Scope("ByLength"), &byLengthFn{P: p}, examples), nil
	}, opts...)
}

func init() {
	register.DoFn4x0[context.Context, beam.EventTime, Example, func(beam.EventTime, []Example)](&byLengthFn{})
	register.Emitter2[beam.EventTime, []Example]()
}

// byLengthFn holds a window of a bundle's examples, then emits them in
// batches by length (planBatches); FinishBundle emits the rest. Batches
// carry the latest timestamp of their window.
type byLengthFn struct {
	P LengthBatching

	buf []Example
	ts  beam.EventTime

	batches, elements beam.Counter
}

func (f *byLengthFn) Setup() {
	f.batches = beam.NewCounter(stepbeam.Namespace, "runinference.length_batches")
	f.elements = beam.NewCounter(stepbeam.Namespace, "runinference.length_batched")
}

func (f *byLengthFn) StartBundle(_ func(beam.EventTime, []Example)) {
	f.buf, f.ts = nil, mtime.MinTimestamp
}

func (f *byLengthFn) ProcessElement(ctx context.Context, ts beam.EventTime, e Example, emit func(beam.EventTime, []Example)) {
	f.buf = append(f.buf, e)
	f.ts = max(f.ts, ts)
	if len(f.buf) >= f.P.Window {
		f.flush(ctx, emit)
	}
}

func (f *byLengthFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, []Example)) {
	if len(f.buf) > 0 {
		f.flush(ctx, emit)
	}
}

func (f *byLengthFn) flush(ctx context.Context, emit func(beam.EventTime, []Example)) {
	buf, ts := f.buf, f.ts
	f.buf, f.ts = nil, mtime.MinTimestamp
	lengths := make([]int, len(buf))
	for i, e := range buf {
		lengths[i] = exampleLength(e)
	}
	for _, b := range planBatches(lengths, f.P.MaxBatchSize, f.P.MaxBatchTokens) {
		batch := make([]Example, len(b))
		for i, j := range b {
			batch[i] = buf[j]
		}
		f.batches.Inc(ctx, 1)
		f.elements.Inc(ctx, int64(len(batch)))
		emit(ts, batch)
	}
}
