package batch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linear is a synthetic downstream cost: fixed + perElement*size.
func linear(fixed, perElement time.Duration) func(int) time.Duration {
	return func(n int) time.Duration { return fixed + time.Duration(n)*perElement }
}

// run asks e for n sizes, recording cost(size) for each.
func run(e *Estimator, n int, cost func(int) time.Duration) []int {
	var sizes []int
	for range n {
		s := e.Next()
		sizes = append(sizes, s)
		e.Record(s, cost(s))
	}
	return sizes
}

func TestParamsDefaults(t *testing.T) {
	p, err := Params{}.normalize()
	require.NoError(t, err)
	assert.Equal(t, Params{
		MinBatchSize:        1,
		MaxBatchSize:        10000,
		TargetBatchDuration: 10 * time.Second,
		TargetBatchOverhead: 0.05,
	}, p)

	// Setting one target turns the default targets off.
	p, err = Params{TargetBatchDurationWithFixedCost: time.Second}.normalize()
	require.NoError(t, err)
	assert.Equal(t, Params{MinBatchSize: 1, MaxBatchSize: 10000, TargetBatchDurationWithFixedCost: time.Second}, p)

	// An unset MaxBatchSize is at least MinBatchSize.
	p, err = Params{MinBatchSize: 20000}.normalize()
	require.NoError(t, err)
	assert.Equal(t, 20000, p.MaxBatchSize)

	// normalize is idempotent.
	q, err := p.normalize()
	require.NoError(t, err)
	assert.Equal(t, p, q)
}

// The three targets on Python's cost model, 1s + 0.7s per element, give
// Python's sequences (apache_beam/transforms/util_test.py).
func TestEstimatorTargets(t *testing.T) {
	cost := linear(time.Second, 700*time.Millisecond)
	for _, tc := range []struct {
		name string
		p    Params
		want []int
	}{
		// 14*0.7 is as close to 10 as it gets.
		{"duration", Params{TargetBatchDuration: 10 * time.Second}, []int{1, 2, 4, 8, 14, 14, 14}},
		// 1 + 12*0.7 is as close to 10 as it gets.
		{"duration with fixed cost", Params{TargetBatchDurationWithFixedCost: 10 * time.Second}, []int{1, 2, 4, 8, 12, 12, 12}},
		// At 27 elements a batch takes ~20s, of which 1s (5%) is fixed.
		{"overhead", Params{TargetBatchOverhead: 0.05}, []int{1, 2, 4, 8, 16, 27, 27, 27}},
		// The defaults: the overhead target is the tighter.
		{"defaults", Params{}, []int{1, 2, 4, 8, 14, 14, 14}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEstimator(tc.p)
			require.NoError(t, err)
			assert.Equal(t, tc.want, run(e, len(tc.want), cost))
		})
	}
}

// Past 10 timings, proposals spread around the target (Python's
// test_variance).
func TestEstimatorSpread(t *testing.T) {
	e, err := NewEstimator(Params{TargetBatchOverhead: 0.05})
	require.NoError(t, err)
	sizes := run(e, maxDataPoints-1, linear(time.Second, 700*time.Millisecond))
	last := sizes[len(sizes)-20:]
	distinct := slices.Compact(slices.Sorted(slices.Values(last)))
	assert.Greater(t, len(distinct), 3, "sizes %v", last)
	const target = 27
	for _, s := range last {
		assert.Greater(t, float64(s), target*(1-variance))
		assert.Less(t, float64(s), target*(1+variance))
	}
}

// On a noisy cost (2% noise) with outliers (a pause making one batch in 20
// four times slower), the sizes settle around the overhead target,
// 2ms/20µs * 19 = 1900, and the fit finds the model.
func TestEstimatorConvergesWithNoise(t *testing.T) {
	const (
		fixed      = 2 * time.Millisecond
		perElement = 20 * time.Microsecond
		target     = 1900
	)
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 2))
		cost := func(n int) time.Duration {
			d := float64(linear(fixed, perElement)(n)) * (1 + 0.02*rng.NormFloat64())
			if rng.IntN(20) == 0 {
				d *= 4
			}
			return time.Duration(d)
		}
		e, err := NewEstimator(Params{})
		require.NoError(t, err)
		sizes := run(e, 300, cost)

		last := slices.Sorted(slices.Values(sizes[200:]))
		assert.InDelta(t, target, last[len(last)/2], target*0.3, "seed %d: median of the last 100 sizes; sizes %v", seed, sizes)
		assert.GreaterOrEqual(t, last[0], target/2, "seed %d", seed)
		assert.LessOrEqual(t, last[len(last)-1], target*2, "seed %d", seed)
		_, b, ok := e.Fit()
		require.True(t, ok)
		assert.InDelta(t, float64(perElement), float64(b), float64(perElement)*0.1, "seed %d: per-element cost %v", seed, b)
		assert.LessOrEqual(t, e.Len(), maxDataPoints)
	}
}

// Every proposal is in [min, max] and at most twice the largest size timed
// before it; a cheap downstream grows sizes geometrically to max and an
// expensive one keeps them at min (or min+1, alternately).
func TestEstimatorBoundsAndGrowthCap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        Params
		cost     func(int) time.Duration
		settleAt int // the size the last proposals reach, if not 0
	}{
		{"free", Params{MinBatchSize: 5, MaxBatchSize: 50}, linear(0, 0), 50},
		{"cheap", Params{MinBatchSize: 1, MaxBatchSize: 300}, linear(time.Second, time.Microsecond), 300},
		{"expensive", Params{MinBatchSize: 3, MaxBatchSize: 100}, linear(time.Microsecond, time.Minute), 0},
		{"linear", Params{MinBatchSize: 2, MaxBatchSize: 10000}, linear(time.Millisecond, 10*time.Microsecond), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEstimator(tc.p)
			require.NoError(t, err)
			largest := 0
			var sizes []int
			for i := range 250 {
				s := e.Next()
				sizes = append(sizes, s)
				require.GreaterOrEqual(t, s, tc.p.MinBatchSize, "proposal %d", i)
				require.LessOrEqual(t, s, tc.p.MaxBatchSize, "proposal %d", i)
				if largest > 0 {
					require.LessOrEqual(t, s, max(maxGrowthFactor*largest, tc.p.MinBatchSize+1), "proposal %d after largest %d", i, largest)
				}
				largest = max(largest, s)
				e.Record(s, tc.cost(s))
			}
			if tc.settleAt > 0 {
				// Spread by up to -25% below the cap.
				last := sizes[len(sizes)-20:]
				assert.Contains(t, last, tc.settleAt)
				for _, s := range last {
					assert.GreaterOrEqual(t, float64(s), float64(tc.settleAt)*(1-variance)-1)
				}
			}
			if tc.name == "free" {
				assert.Equal(t, []int{5, 10, 20, 40, 50, 50}, sizes[:6])
			}
			if tc.name == "expensive" {
				assert.Equal(t, []int{3, 6}, sizes[:2]) // the second size is forced
				for _, s := range sizes[2:] {
					assert.LessOrEqual(t, s, tc.p.MinBatchSize+1)
				}
			}
		})
	}
}

func TestEstimatorFixed(t *testing.T) {
	e, err := NewEstimator(Params{MinBatchSize: 7, MaxBatchSize: 7})
	require.NoError(t, err)
	for _, s := range run(e, 30, linear(time.Millisecond, time.Millisecond)) {
		assert.Equal(t, 7, s)
	}
}

// An ignored timing is not recorded and its size is proposed again
// (Python's test_ignore_next_timing).
func TestEstimatorIgnoreNext(t *testing.T) {
	e, err := NewEstimator(Params{})
	require.NoError(t, err)
	e.IgnoreNext()
	var sizes []int
	for i := range 6 {
		s := e.Next()
		sizes = append(sizes, s)
		d := 10 * time.Millisecond
		if i == 0 {
			d = time.Second
		}
		e.Record(s, d)
	}
	assert.Equal(t, []int{1, 1, 2, 4, 8, 16}, sizes)
	require.Equal(t, 5, e.Len())
	for i, want := range []int{1, 2, 4, 8, 16} {
		assert.Equal(t, timing{size: want, secs: 0.01}, e.data[i])
	}
}

func TestEstimatorThinsData(t *testing.T) {
	e, err := NewEstimator(Params{})
	require.NoError(t, err)
	for i := range 1000 {
		e.Record(1+i%50, time.Duration(i)*time.Microsecond)
		require.Less(t, e.Len(), maxDataPoints)
	}
	assert.Equal(t, 0, e.Len()%2, "thinning keeps the parity")
}

func TestEstimatorRecordIgnoresBadInput(t *testing.T) {
	e, err := NewEstimator(Params{})
	require.NoError(t, err)
	e.Record(0, time.Second)
	e.Record(-3, time.Second)
	assert.Equal(t, 0, e.Len())
	e.Record(4, -time.Second)
	assert.Equal(t, []timing{{size: 4, secs: 0}}, e.data)
}

func TestNewEstimatorInvalid(t *testing.T) {
	_, err := NewEstimator(Params{MinBatchSize: 10, MaxBatchSize: 5})
	assert.EqualError(t, err, "batch: invalid Params: MaxBatchSize (5) is less than MinBatchSize (10)")
}

// Python's regression tests (util_test.py _run_regression_test).
func TestFitLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const eps = 1e-9

	xs, ys := []float64{}, []float64{}
	for range 10 {
		x := rng.Float64()
		xs, ys = append(xs, x), append(ys, 2*x+1)
	}
	a, b := fitLine(xs, ys)
	assert.InDelta(t, 1, a, eps)
	assert.InDelta(t, 2, b, eps)

	xs, ys = nil, nil
	for range 100 {
		x := 1 + rng.Float64()
		xs, ys = append(xs, x), append(ys, 7*x+5+0.01*rng.Float64())
	}
	a, b = fitLine(xs, ys)
	assert.InDelta(t, 5, a, 0.02)
	assert.InDelta(t, 7, b, 0.02)

	// All xs the same: no intercept, the mean slope.
	xs, ys = nil, nil
	x := 1 + rng.Float64()
	var sum float64
	for range 100 {
		y := 7*x + 5 + 0.01*rng.Float64()
		xs, ys = append(xs, x), append(ys, y)
		sum += y
	}
	a, b = fitLine(xs, ys)
	assert.Equal(t, 0.0, a)
	assert.InDelta(t, sum/100/x, b, eps)

	// Slow batches, even many at one size, are left out of the fit.
	xs, ys = nil, nil
	for range 100 {
		x := 1 + rng.Float64()
		xs, ys = append(xs, x), append(ys, 2*x+1)
	}
	for range 12 {
		xs, ys = append(xs, 10), append(ys, 30)
	}
	for range 5 {
		x := 1 + rng.Float64()
		xs, ys = append(xs, x), append(ys, 4*(2*x+1))
	}
	a, b = fitLine(xs, ys)
	assert.InDelta(t, 1, a, eps)
	assert.InDelta(t, 2, b, eps)
}

func TestFitLineDegenerate(t *testing.T) {
	// After the outliers are dropped the rest share one x: the plain fit
	// stands.
	xs := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}
	ys := []float64{1, 1.1, 0.9, 1, 1.05, 0.95, 1, 1, 1.02, 0.98, 1, 3}
	a, b := fitLine(xs, ys)
	assert.False(t, math.IsNaN(a) || math.IsNaN(b))
	assert.InDelta(t, 2, b, 0.1)
}
