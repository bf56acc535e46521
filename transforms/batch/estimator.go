package batch

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

const (
	// maxGrowthFactor bounds a proposal to this multiple of the largest size
	// timed so far.
	maxGrowthFactor = 2
	// maxDataPoints is how many timings are kept; at this many, two of the
	// older ones are dropped.
	maxDataPoints = 100
	// variance spreads proposals by up to ±variance of the target once there
	// are more than smearAfter timings.
	variance   = 0.25
	smearAfter = 10
	// With robustAfter timings or more, a fit leaves out, in trimRounds
	// rounds, the timings further than outlierMADs robust standard
	// deviations from it.
	robustAfter = 10
	trimRounds  = 2
	outlierMADs = 3
)

// Estimator proposes batch sizes from the timings of past batches, in the
// way of Beam Python's _BatchSizeEstimator: call Next for the size of the
// next batch and Record with the size and downstream time of each batch
// made. It never looks at a clock, so it is deterministic: an Estimator fed
// the same timings proposes the same sizes (its ±25% spread is drawn from a
// fixed-seed generator).
//
// The package documentation describes the fit and the targets. An
// Estimator is not safe for concurrent use; a DoFn instance owns one.
type Estimator struct {
	p          Params
	data       []timing
	rng        *rand.Rand
	ignoreNext bool
	replay     int // if > 0, the next proposal
	last       int // the last proposal
}

type timing struct {
	size int
	secs float64
}

// NewEstimator returns an Estimator for p, or p's validation error.
func NewEstimator(p Params) (*Estimator, error) {
	p, err := p.normalize()
	if err != nil {
		return nil, err
	}
	return &Estimator{p: p, rng: rand.New(rand.NewPCG(0x6265616d, 0x67707521))}, nil
}

// Next returns the size of the next batch, in [MinBatchSize, MaxBatchSize].
func (e *Estimator) Next() int {
	n := e.next()
	e.last = n
	return n
}

func (e *Estimator) next() int {
	if e.replay > 0 {
		n := e.replay
		e.replay = 0
		return n
	}
	lo, hi := e.p.MinBatchSize, e.p.MaxBatchSize
	switch {
	case lo == hi, len(e.data) == 0:
		return lo
	case len(e.data) == 1:
		// A second, different size, so that there is a line to fit.
		return max(min(hi, grow(lo)), lo+1)
	}

	a, b := e.fit()
	a = max(a, 1e-10)
	b = max(b, 1e-20)

	target := float64(hi)
	if d := e.p.TargetBatchDurationWithFixedCost; d > 0 {
		target = min(target, (d.Seconds()-a)/b)
	}
	if d := e.p.TargetBatchDuration; d > 0 {
		target = min(target, d.Seconds()/b)
	}
	if o := e.p.TargetBatchOverhead; o > 0 {
		target = min(target, a/b*(1/o-1))
	}
	if len(e.data) > smearAfter {
		target += math.Trunc(target * variance * 2 * (e.rng.Float64() - 0.5))
	}
	// Round down, but not 474.99999999 from float rounding.
	target *= 1 + 1e-9
	// Alternate the floor between lo and lo+1 so that a fit stuck at the
	// smallest size still sees two sizes.
	floor := lo + len(e.data)%2
	limit := min(grow(e.largest()), hi)
	return int(max(float64(floor), min(target, float64(limit))))
}

// Record adds the downstream time d of a batch of size elements. A size
// below 1 is ignored and a negative d counts as 0.
func (e *Estimator) Record(size int, d time.Duration) {
	if size < 1 {
		return
	}
	if e.ignoreNext {
		e.ignoreNext = false
		r := e.last
		if r < 1 {
			r = size
		}
		e.replay = min(r, e.p.MaxBatchSize)
		return
	}
	e.data = append(e.data, timing{size: size, secs: max(d, 0).Seconds()})
	if len(e.data) >= maxDataPoints {
		e.thin()
	}
}

// IgnoreNext makes the next Record not count, and the size Next last
// proposed be proposed again, so that it is timed without the one-off cost
// (setup, a first call) the ignored batch paid. Elements calls it at the
// start of every bundle.
func (e *Estimator) IgnoreNext() { e.ignoreNext = true }

// Fit returns the current fit of the downstream time of a batch,
// fixed + perElement*size, and false if fewer than two timings were recorded.
func (e *Estimator) Fit() (fixed, perElement time.Duration, ok bool) {
	if len(e.data) < 2 {
		return 0, 0, false
	}
	a, b := e.fit()
	return seconds(a), seconds(b), true
}

// Len returns the number of timings the fit is made from (at most 100).
func (e *Estimator) Len() int { return len(e.data) }

// fit fits the timings.
func (e *Estimator) fit() (a, b float64) {
	xs, ys := make([]float64, len(e.data)), make([]float64, len(e.data))
	for i, t := range e.data {
		xs[i], ys[i] = float64(t.size), t.secs
	}
	return fitLine(xs, ys)
}

// thin drops two timings from the older half, keeping the parity of
// len(e.data), which alternates the floor of the proposals.
func (e *Estimator) thin() {
	i := e.rng.IntN(len(e.data) / 4)
	e.data = slices.Delete(e.data, i, i+1)
	i = e.rng.IntN(len(e.data) / 2)
	e.data = slices.Delete(e.data, i, i+1)
}

func (e *Estimator) largest() int {
	n := 0
	for _, t := range e.data {
		n = max(n, t.size)
	}
	return n
}

func grow(n int) int {
	if n > math.MaxInt/maxGrowthFactor {
		return math.MaxInt
	}
	return n * maxGrowthFactor
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// fitLine fits y = a + b*x by least squares, weighting each point by 1/x²:
// the noise in a batch's time grows with its size, and small batches tell
// most about the fixed cost a (Python weights the same way, as
// numpy.polyfit(w=1/x)). With robustAfter points or more, it then twice
// leaves out the points whose time per element, y/x, is off the fit by more
// than outlierMADs robust standard deviations (1.4826 median absolute
// deviations) and fits again. If every x is the same, it returns
// (0, mean(y)/x).
func fitLine(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	if !slices.ContainsFunc(xs, func(x float64) bool { return x != xs[0] }) {
		var sy float64
		for _, y := range ys {
			sy += y
		}
		if xs[0] == 0 {
			return sy / n, 0
		}
		return 0, sy / n / xs[0]
	}
	w := make([]float64, len(xs))
	for i, x := range xs {
		w[i] = 1 / (x * x)
	}
	a, b, _ = weightedFit(xs, ys, w)
	if len(xs) < robustAfter {
		return a, b
	}
	q := make([]float64, len(xs))   // residual per element
	dev := make([]float64, len(xs)) // |q - median(q)|
	for i, x := range xs {
		q[i] = math.Abs(ys[i] / x)
	}
	perElement := median(q)
	for range trimRounds {
		for i, x := range xs {
			q[i] = (ys[i] - a - b*x) / x
		}
		med := median(q)
		for i := range q {
			dev[i] = math.Abs(q[i] - med)
		}
		// At least a millionth of the typical time per element, so that
		// rounding does not make outliers of an exact fit.
		limit := max(outlierMADs*1.4826*median(dev), 1e-6*perElement)
		for i, x := range xs {
			w[i] = 0
			if dev[i] <= limit {
				w[i] = 1 / (x * x)
			}
		}
		a2, b2, ok := weightedFit(xs, ys, w)
		if !ok {
			break
		}
		a, b = a2, b2
	}
	return a, b
}

// median returns the median of v, which it leaves as it is.
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// weightedFit minimises sum w*(a + b*x - y)². It returns false if the
// points of nonzero weight do not determine a line.
func weightedFit(xs, ys, w []float64) (a, b float64, ok bool) {
	var sw, swx, swy float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, x := range xs {
		if w[i] == 0 {
			continue
		}
		sw += w[i]
		swx += w[i] * x
		swy += w[i] * ys[i]
		lo, hi = min(lo, x), max(hi, x)
	}
	if !(lo < hi) {
		return 0, 0, false // fewer than two sizes
	}
	xbar, ybar := swx/sw, swy/sw
	var sxx, sxy float64
	for i, x := range xs {
		sxx += w[i] * (x - xbar) * (x - xbar)
		sxy += w[i] * (x - xbar) * (ys[i] - ybar)
	}
	b = sxy / sxx
	return ybar - b*xbar, b, true
}
