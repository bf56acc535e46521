package batch

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock advances only when a batch is emitted, by the synthetic cost
// of the batch.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

type emitted struct {
	ts    beam.EventTime
	batch []beam.T
}

// newTestFn returns a set-up elementsFn on a fake clock, and an emitter that
// records the batches and advances the clock by cost.
func newTestFn(t *testing.T, p Params, cost func(int) time.Duration) (*elementsFn, func(beam.EventTime, []beam.T), *[]emitted) {
	t.Helper()
	p, err := p.normalize()
	require.NoError(t, err)
	clock := &fakeClock{t: time.Unix(0, 0)}
	f := &elementsFn{Params: p, now: clock.now}
	require.NoError(t, f.Setup())
	var out []emitted
	emit := func(ts beam.EventTime, b []beam.T) {
		out = append(out, emitted{ts, b})
		clock.t = clock.t.Add(cost(len(b)))
	}
	return f, emit, &out
}

// With downstream time 0, sizes double up to max; the first batch of the
// bundle is not timed and its size is repeated (Python's
// test_grows_to_max_batch: 164 elements, max 50).
func TestElementsFnGrowsToMax(t *testing.T) {
	ctx := context.Background()
	f, emit, out := newTestFn(t, Params{MinBatchSize: 1, MaxBatchSize: 50}, linear(0, 0))
	f.StartBundle(emit)
	for i := range 164 {
		f.ProcessElement(ctx, mtime.FromMilliseconds(int64(1000-i)), i, emit)
	}
	f.FinishBundle(ctx, emit)

	var sizes []int
	next := 0
	for _, e := range *out {
		sizes = append(sizes, len(e.batch))
		// In order, each once, with the latest timestamp of the batch: that
		// of its first element.
		assert.Equal(t, mtime.FromMilliseconds(int64(1000-next)), e.ts)
		for _, v := range e.batch {
			require.Equal(t, next, v)
			next++
		}
	}
	assert.Equal(t, []int{1, 1, 2, 4, 8, 16, 32, 50, 50}, sizes)
	assert.Equal(t, 164, next)
}

// Over bundles of varied sizes, every element is emitted once, batches are
// at most max, and only the last batch of a bundle is below min.
func TestElementsFnBundles(t *testing.T) {
	ctx := context.Background()
	for _, p := range []Params{
		{MinBatchSize: 4, MaxBatchSize: 64},
		{MinBatchSize: 10, MaxBatchSize: 10},
		{},
	} {
		f, emit, out := newTestFn(t, p, linear(time.Millisecond, 10*time.Microsecond))
		rng := rand.New(rand.NewPCG(5, 6))
		next := 0
		for b := range 40 {
			*out = nil
			f.StartBundle(emit)
			n := rng.IntN(300)
			for range n {
				f.ProcessElement(ctx, mtime.ZeroTimestamp, next, emit)
				next++
			}
			f.FinishBundle(ctx, emit)

			total := 0
			for i, e := range *out {
				total += len(e.batch)
				require.LessOrEqual(t, len(e.batch), f.Params.MaxBatchSize, "bundle %d batch %d", b, i)
				if i < len(*out)-1 {
					require.GreaterOrEqual(t, len(e.batch), f.Params.MinBatchSize, "bundle %d batch %d", b, i)
				}
				if f.Params.fixed() && i < len(*out)-1 {
					require.Equal(t, f.Params.MinBatchSize, len(e.batch))
				}
			}
			require.Equal(t, n, total, "bundle %d", b)
		}
	}
}
