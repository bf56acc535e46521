package batch_test

import (
	"math"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/beamgpu/beamgpu/transforms/batch"
)

func TestMain(m *testing.M) {
	ptest.Main(m) // prism
}

// tile stands for a beamgpu batch element with a slice inside.
type tile struct {
	ID int
	Px []float32
}

func init() {
	register.Function1x1(batchLen)
	register.DoFn2x0[[]beam.T, func(int)]((*belowMinFn)(nil))
	register.Emitter1[int]()
	register.Function1x1(sumTileIDs)
	register.Function1x2(toKV)
}

func batchLen(b []beam.T) int { return len(b) }

// belowMinFn emits 1 for every batch smaller than Min.
type belowMinFn struct{ Min int }

func (f *belowMinFn) ProcessElement(b []beam.T, emit func(int)) {
	if len(b) < f.Min {
		emit(1)
	}
}

// sumTileIDs takes a batch as a typed slice: Beam converts the []beam.T
// that Elements emits.
func sumTileIDs(b []tile) int {
	n := 0
	for _, t := range b {
		n += t.ID
	}
	return n
}

func toKV(x int) (int, int) { return x, x }

func ints(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Every element is in exactly one batch, batches are at most MaxBatchSize,
// and only the last batch of the (single) bundle is below MinBatchSize.
func TestElementsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		p    batch.Params
	}{
		{"defaults", 1000, batch.Params{}},
		{"bounded", 1000, batch.Params{MinBatchSize: 3, MaxBatchSize: 20}},
		{"fixed", 250, batch.Params{MinBatchSize: 16, MaxBatchSize: 16}},
		{"one element", 1, batch.Params{MinBatchSize: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			in := beam.CreateList(s, ints(tc.n))
			batches := batch.Elements(s, in, tc.p)

			passert.Equals(s, batch.Unbatch(s, batches), in)
			maxSize := tc.p.MaxBatchSize
			if maxSize == 0 {
				maxSize = batch.DefaultMaxBatchSize
			}
			passert.AllWithinBounds(s, beam.ParDo(s, batchLen, batches), 1, float64(maxSize))
			small := beam.ParDo(s, &belowMinFn{Min: max(tc.p.MinBatchSize, 1)}, batches)
			passert.AllWithinBounds(s, stats.Sum(s, small), 0, 1)

			ptest.RunAndValidate(t, p)
		})
	}
}

// Fixed-size batches: the last one holds the rest (Python's
// test_constant_batch).
func TestElementsFixedSizes(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, ints(35))
	batches := batch.Elements(s, in, batch.Params{MinBatchSize: 10, MaxBatchSize: 10})
	passert.Equals(s, beam.ParDo(s, batchLen, batches), 10, 10, 10, 5)
	ptest.RunAndValidate(t, p)
}

// A struct element type, consumed downstream as a typed slice.
func TestElementsStructElements(t *testing.T) {
	var tiles []tile
	for i := range 300 {
		tiles = append(tiles, tile{ID: i, Px: []float32{float32(i), 0.5}})
	}
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, tiles)
	batches := batch.Elements(s, in, batch.Params{MaxBatchSize: 64})
	passert.Equals(s, stats.Sum(s, beam.ParDo(s, sumTileIDs, batches)), 300*299/2)
	passert.Equals(s, batch.Unbatch(s, batches), in)
	ptest.RunAndValidate(t, p)
}

func TestElementsMetrics(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, ints(100))
	batches := batch.Elements(s, in, batch.Params{MinBatchSize: 10, MaxBatchSize: 10})
	passert.Count(s, batches, "batches", 10)
	res, err := ptest.RunWithMetrics(p)
	require.NoError(t, err)

	q := res.Metrics().Query(func(r metrics.SingleResult) bool { return r.Namespace() == batch.Namespace })
	counters := map[string]int64{}
	for _, c := range q.Counters() {
		counters[c.Name()] += c.Result()
	}
	assert.Equal(t, map[string]int64{batch.MetricBatches: 10, batch.MetricElements: 100}, counters)
	require.Len(t, q.Distributions(), 1)
	d := q.Distributions()[0]
	assert.Equal(t, batch.MetricSize, d.Name())
	assert.Equal(t, metrics.DistributionValue{Count: 10, Sum: 100, Min: 10, Max: 10}, d.Result())
}

func TestTryElementsInvalidParams(t *testing.T) {
	for _, tc := range []struct {
		p    batch.Params
		want string
	}{
		{batch.Params{MinBatchSize: -1}, "MinBatchSize must be at least 1 (0 means 1), got -1"},
		{batch.Params{MaxBatchSize: -5}, "MaxBatchSize must be at least 1 (0 means 10000), got -5"},
		{batch.Params{MinBatchSize: 10, MaxBatchSize: 5}, "MaxBatchSize (5) is less than MinBatchSize (10)"},
		{batch.Params{MinBatchSize: 20000, MaxBatchSize: 10000}, "MaxBatchSize (10000) is less than MinBatchSize (20000)"},
		{batch.Params{TargetBatchDuration: -time.Second}, "TargetBatchDuration must not be negative, got -1s"},
		{batch.Params{TargetBatchDurationWithFixedCost: -time.Millisecond}, "TargetBatchDurationWithFixedCost must not be negative, got -1ms"},
		{batch.Params{TargetBatchOverhead: 1.5}, "TargetBatchOverhead must be in (0, 1] (0 means unset), got 1.5"},
		{batch.Params{TargetBatchOverhead: -0.1}, "TargetBatchOverhead must be in (0, 1] (0 means unset), got -0.1"},
		{batch.Params{TargetBatchOverhead: math.NaN()}, "TargetBatchOverhead must be in (0, 1] (0 means unset), got NaN"},
		{batch.Params{MinBatchSize: -1, TargetBatchDuration: -time.Second},
			"MinBatchSize must be at least 1 (0 means 1), got -1; TargetBatchDuration must not be negative, got -1s"},
	} {
		want := "batch.Elements: batch: invalid Params: " + tc.want
		assert.EqualError(t, tc.p.Validate(), "batch: invalid Params: "+tc.want)

		_, s := beam.NewPipelineWithRoot()
		in := beam.Create(s, 1, 2, 3)
		_, err := batch.TryElements(s, in, tc.p)
		assert.EqualError(t, err, want)
		assert.PanicsWithError(t, want, func() { batch.Elements(s, in, tc.p) })
	}
}

func TestTryElementsInvalidInput(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	in := beam.Create(s, 1, 2, 3)

	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), in)
	_, err := batch.TryElements(s, windowed, batch.Params{})
	assert.ErrorContains(t, err, "input must be in the global window")

	kv := beam.ParDo(s, toKV, in)
	_, err = batch.TryElements(s, kv, batch.Params{})
	assert.ErrorContains(t, err, "input must not be a KV")

	assert.PanicsWithValue(t, "batch.Unbatch: input must be a PCollection of slices, got int", func() { batch.Unbatch(s, in) })
}

func TestParamsValidateOK(t *testing.T) {
	for _, p := range []batch.Params{
		{},
		{MinBatchSize: 1, MaxBatchSize: 1},
		{MinBatchSize: 20000},
		{TargetBatchOverhead: 1},
		{TargetBatchDuration: time.Millisecond, TargetBatchDurationWithFixedCost: time.Second, TargetBatchOverhead: 0.1},
	} {
		assert.NoError(t, p.Validate(), "%+v", p)
	}
}
