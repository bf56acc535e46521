package parallel_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every task runs once, whatever the workers and the tasks.
func TestEveryTaskOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 3, 7, 64} {
		for _, n := range []int{0, 1, 2, 5, 100, 1001} {
			seen := make([]atomic.Int32, n)
			parallel.Do(workers, n, func(i int) { seen[i].Add(1) })
			chunks := make([]atomic.Int32, n)
			parallel.Chunks(workers, n, func(lo, hi int) {
				assert.Less(t, lo, hi)
				for i := lo; i < hi; i++ {
					chunks[i].Add(1)
				}
			})
			for i := range n {
				assert.EqualValues(t, 1, seen[i].Load(), "Do: workers %d, n %d, task %d", workers, n, i)
				assert.EqualValues(t, 1, chunks[i].Load(), "Chunks: workers %d, n %d, task %d", workers, n, i)
			}
		}
	}
}

// DoWith gives each goroutine its own state, made once per goroutine.
func TestDoWithState(t *testing.T) {
	var mu sync.Mutex
	made := 0
	sums := map[*int]int{}
	parallel.DoWith(4, 1000, func() func(int) {
		mu.Lock()
		made++
		own := new(int)
		mu.Unlock()
		return func(i int) {
			*own += i
			mu.Lock()
			sums[own] = *own
			mu.Unlock()
		}
	})
	assert.LessOrEqual(t, made, 4)
	total := 0
	for _, s := range sums {
		total += s
	}
	assert.Equal(t, 999*1000/2, total)
}

// Small loops stay on one goroutine; large ones get at most GOMAXPROCS.
func TestWorkers(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	assert.Equal(t, 1, parallel.Workers(10, 1))
	assert.Equal(t, 1, parallel.Workers(0, 1))
	assert.Equal(t, min(procs, 2), parallel.Workers(2, parallel.MinWork))
	assert.Equal(t, procs, parallel.Workers(1<<20, 1<<10))
}

// DoErr runs every task, failing or not, and joins the errors in task
// order.
func TestDoErr(t *testing.T) {
	for _, workers := range []int{1, 3} {
		var ran atomic.Int32
		err := parallel.DoErr(workers, 6, func(i int) error {
			ran.Add(1)
			if i%2 == 1 {
				return fmt.Errorf("task %d failed", i)
			}
			return nil
		})
		assert.EqualValues(t, 6, ran.Load(), "workers %d: every task runs", workers)
		require.Error(t, err)
		assert.Equal(t, "task 1 failed\ntask 3 failed\ntask 5 failed", err.Error(), "workers %d", workers)
	}
	assert.NoError(t, parallel.DoErr(2, 5, func(int) error { return nil }))
	assert.NoError(t, parallel.DoErr(2, 0, func(int) error { return errors.New("never called") }))
	sentinel := errors.New("sentinel")
	err := parallel.DoErr(2, 3, func(i int) error {
		if i == 2 {
			return fmt.Errorf("wrapped: %w", sentinel)
		}
		return nil
	})
	assert.ErrorIs(t, err, sentinel)
}

// A loop allocates nothing of its own at several workers: its goroutines
// are kept between loops (a function without captured state allocates
// nothing either).
func TestNoAllocations(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var sum atomic.Int64
	each := func(i int) { sum.Add(int64(i)) }
	chunks := func(lo, hi int) { sum.Add(int64(hi - lo)) }
	parallel.Do(4, 64, each) // the helpers start
	allocs := testing.AllocsPerRun(100, func() {
		parallel.Do(4, 64, each)
		parallel.Chunks(4, 64, chunks)
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 101*(64*63/2+64)+64*63/2, int(sum.Load()))
}

// Loops inside loops' tasks, from several goroutines at once, run every
// task once and never wait for each other (a helper takes a loop only when
// idle).
func TestNested(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var wg sync.WaitGroup
	var total atomic.Int64
	for range 8 {
		wg.Go(func() {
			parallel.Do(4, 16, func(int) {
				parallel.Chunks(3, 10, func(lo, hi int) {
					parallel.Do(2, hi-lo, func(int) { total.Add(1) })
				})
			})
		})
	}
	wg.Wait()
	assert.EqualValues(t, 8*16*10, total.Load())
}

// sumTasks adds its task indices.
type sumTasks struct{ sum atomic.Int64 }

func (s *sumTasks) Task(i int) { s.sum.Add(int64(i)) }

// DoTasks and EachTasks run every task once and allocate nothing.
func TestTasks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s := new(sumTasks)
	allocs := testing.AllocsPerRun(50, func() {
		parallel.DoTasks(4, 100, s)
		parallel.DoTasks(1, 100, s)
		parallel.EachTasks(100, parallel.MinWork, s)
	})
	assert.Zero(t, allocs)
	assert.EqualValues(t, 51*3*(100*99/2), s.sum.Load())
}

type sumArgs struct {
	xs  []int64
	sum *atomic.Int64
}

// ForWith and EachWith cover every index once, at one worker and at
// several, and allocate nothing where the function captures nothing.
func TestWith(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector drops sync.Pool's contents at random: ForWith's and EachWith's boxes")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	xs := make([]int64, 1<<16)
	for i := range xs {
		xs[i] = int64(i)
	}
	var sum atomic.Int64
	args := sumArgs{xs: xs, sum: &sum}
	loops := func() {
		parallel.ForWith(len(xs), 1, args, func(a *sumArgs, lo, hi int) {
			for _, x := range a.xs[lo:hi] {
				a.sum.Add(x)
			}
		})
		parallel.EachWith(len(xs), parallel.MinWork, args, func(a *sumArgs, i int) { a.sum.Add(a.xs[i]) })
		parallel.ForWith(3, 1, args, func(a *sumArgs, lo, hi int) { a.sum.Add(int64(hi - lo)) }) // one worker
	}
	loops()
	allocs := testing.AllocsPerRun(20, loops)
	assert.Zero(t, allocs)
	n := int64(len(xs))
	assert.Equal(t, 22*(2*n*(n-1)/2+3), sum.Load())
}
