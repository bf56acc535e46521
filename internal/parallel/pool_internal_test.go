package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A helper that comes to a loop after its last task was taken runs no
// task and touches nothing of the caller's; the caller does not wait for
// it, and whichever of them lets go of the job last returns it to the free
// list, its loop cleared.
func TestLateHelper(t *testing.T) {
	var ran [8]atomic.Int32
	j := &job{last: make(chan struct{}, 1)}
	j.loop = loop{n: len(ran), each: func(i int) { ran[i].Add(1) }}
	j.remaining.Store(int64(j.n))
	j.refs.Store(2) // the caller and one helper offered the job
	j.cut(2)
	require.True(t, j.work(0), "the caller finishes the last task, the helper's share too")
	j.release()
	assert.NotNil(t, j.each, "the helper still holds the job")
	j.each = nil // a late helper must not call the loop's function
	assert.False(t, j.work(1), "the late helper finishes nothing")
	j.release()
	assert.Zero(t, j.n, "the job is cleared when the last holder lets go")
	for i := range ran {
		assert.EqualValues(t, 1, ran[i].Load(), "task %d", i)
	}
	assert.Empty(t, j.last, "no helper signalled")
}

// A caller that waits for a helper's last task returns at once when it
// finished; else watches, then parks and is woken by the helper, which
// sends only to a caller that parked.
func TestWait(t *testing.T) {
	j := newJob()
	j.finish() // before the caller waits: no signal
	assert.Empty(t, j.last)
	j.wait() // returns: the last task finished

	j.state.Store(running)
	done := make(chan struct{})
	go func() { j.wait(); close(done) }()
	for j.state.Load() != parked {
		time.Sleep(waitFor / 4)
	}
	select {
	case <-done:
		t.Fatal("the caller returned before the last task finished")
	case <-time.After(2 * waitFor):
	}
	j.finish()
	<-done
	assert.Empty(t, j.last)
}

// A helper that takes the last task tells the caller, which then returns:
// every task ran once whoever took it, loop after loop, with helpers
// spinning between loops and parked after.
func TestHelpersTakeTasks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var sum atomic.Int64
	for round := range 2000 {
		n := 1 + round%13
		Do(4, n, func(i int) {
			if round%100 == 0 && i == 0 {
				time.Sleep(2 * waitFor) // a caller waits for it parked
			}
			sum.Add(int64(i) + 1)
		})
		if round%500 == 0 {
			<-time.After(2 * spinFor) // the helpers park
		}
	}
	want := int64(0)
	for round := range 2000 {
		n := int64(1 + round%13)
		want += n * (n + 1) / 2
	}
	assert.Equal(t, want, sum.Load())
}

// A loop offers itself to no more helpers than there are other processors:
// with GOMAXPROCS lowered to 1 after helpers started, the caller runs every
// task and no offer waits in jobs (the helpers, on the one processor,
// cannot take one while the caller runs).
func TestNoOffersPastProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	Do(4, 8, func(int) {}) // the helpers start
	require.Eventually(t, func() bool { return len(jobs) == 0 }, time.Second, spinFor, "helpers take the offers they were made")
	runtime.GOMAXPROCS(1)
	var sum atomic.Int64
	Do(4, 100, func(i int) { sum.Add(int64(i)) })
	assert.Zero(t, len(jobs), "offers to helpers with no processor free")
	assert.EqualValues(t, 99*100/2, sum.Load())
}

// Cheap tasks are claimed in runs (grain): claimWork's worth, but four
// claims a worker at least; every task runs once, whatever the grain, the
// workers and n (the last run cut at n).
func TestGrain(t *testing.T) {
	assert.Equal(t, 64, grain(5120, 64, 2), "GlobalAveragePool's blocks of 4 pixels: 64 a claim")
	assert.Equal(t, 12, grain(100, 1, 2), "four claims a worker")
	assert.Equal(t, 1, grain(5120, claimWork, 2), "a task worth a claim alone")
	assert.Equal(t, 1, grain(3, 1, 2))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{1, 7, 100, 1001, 5120} {
		for _, cost := range []int{1, 64, claimWork} {
			seen := make([]atomic.Int32, n)
			Each(n, cost*MinWork, func(i int) { seen[i].Add(1) }) // workers by cost, grain 1
			Each(n, cost, func(i int) { seen[i].Add(1) })
			EachTasks(n, cost, countTasks(seen))
			EachWith(n, cost, seen, func(s *[]atomic.Int32, i int) { (*s)[i].Add(1) })
			EachWorker(n, cost, func() func(int) { return func(i int) { seen[i].Add(1) } })
			for i := range n {
				require.EqualValues(t, 5, seen[i].Load(), "n %d, cost %d, task %d", n, cost, i)
			}
		}
	}
	// A job of runs: each claim adds grain to the counter (three runs, the
	// last cut at n, and the claim that finds none), not one a task.
	var ran [10]atomic.Int32
	j := &job{last: make(chan struct{}, 1)}
	j.loop = loop{n: len(ran), grain: 4, each: func(i int) { ran[i].Add(1) }}
	j.remaining.Store(int64(j.n))
	j.refs.Store(1)
	j.cut(1)
	require.True(t, j.work(0))
	assert.EqualValues(t, 16, j.shares[0].next.Load(), "four claims of 4")
	for i := range ran {
		assert.EqualValues(t, 1, ran[i].Load(), "task %d", i)
	}
}

type countTasks []atomic.Int32

func (c countTasks) Task(i int) { c[i].Add(1) }

// A worker takes its own share's tasks first, in order, then what is left
// of the others' from the next share on; the shares cut the tasks into
// contiguous runs that cover each once, never more shares than tasks.
func TestShares(t *testing.T) {
	var order []int
	j := newJob()
	j.loop = loop{n: 10, each: func(i int) { order = append(order, i) }}
	j.remaining.Store(int64(j.n))
	j.refs.Store(1)
	j.cut(3)
	require.Len(t, j.shares, 3)
	require.True(t, j.work(1))
	assert.Equal(t, []int{3, 4, 5, 6, 7, 8, 9, 0, 1, 2}, order, "share 1 (3..5), then 2 (6..9), then 0")

	for _, c := range []struct{ n, shares, want int }{{7, 3, 3}, {1, 2, 1}, {100, 40, maxShares}, {5, 1, 1}} {
		j.loop = loop{n: c.n}
		j.cut(c.shares)
		require.Len(t, j.shares, c.want, "n %d, shares %d", c.n, c.shares)
		next := int64(0)
		for i := range j.shares {
			s := &j.shares[i]
			assert.Equal(t, next, s.next.Load(), "n %d: the shares are contiguous", c.n)
			assert.Less(t, s.next.Load(), s.end, "n %d: no share is empty", c.n)
			next = s.end
		}
		assert.EqualValues(t, c.n, next, "n %d: the shares end at n", c.n)
	}
}
