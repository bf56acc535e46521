package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The goroutines that share a loop's tasks with its caller are kept
// between loops (helpers): a loop offers itself to up to its workers less
// one of them, and its caller takes tasks too, so that a loop allocates
// nothing of its own (no goroutine, no counter, no wait group: a model's
// run makes thousands of loops). The caller waits for the tasks that
// helpers took, never for a helper to come: a loop started inside another
// loop's task, with every helper busy, runs on its caller alone. There are
// as many helpers as GOMAXPROCS less one, started when a loop first asks
// for them (GOMAXPROCS raised later starts more; lowered, the rest stay
// idle).

// loop is a loop's n tasks: one of tasks or each (a task), newWorker (a
// goroutine's state, then its tasks), or ranges or chunks (task i: the
// indices i*chunk.. of total, a contiguous run).
type loop struct {
	n         int
	tasks     Tasks
	ranges    interface{ Range(lo, hi int) }
	each      func(i int)
	newWorker func() func(i int)
	chunks    func(lo, hi int)
	chunk     int
	total     int
}

// job is a loop running: its tasks taken from next, done when none is
// remaining. The caller waits for the tasks, not for the helpers it sent
// the job: a helper that wakes after the last task was taken (a parked
// goroutine takes tens of microseconds to wake on a virtual machine, more
// than many loops last) finds none and lets go of the job, and the last of
// the caller and the helpers to let go of it returns it to the free list
// (idleJobs).
type job struct {
	loop
	next      atomic.Int64
	remaining atomic.Int64  // tasks not finished
	refs      atomic.Int32  // the caller and the helpers sent the job, until each lets go
	last      chan struct{} // a helper that finishes the last task tells the caller (buffered)
}

// work takes the job's tasks until there are none left and reports whether
// the tasks it ran were the last to finish. It reads the loop's functions only once it has
// a task: a helper that comes late touches nothing of its caller's.
func (j *job) work() (last bool) {
	i := int(j.next.Add(1)) - 1
	if i >= j.n {
		return false
	}
	var done int64
	fn := j.each
	if j.newWorker != nil {
		fn = j.newWorker()
	}
	if j.tasks != nil {
		fn = j.tasks.Task // a method value kept on this goroutine's stack
	}
	for ; i < j.n; i = int(j.next.Add(1)) - 1 {
		if j.chunks != nil || j.ranges != nil {
			lo := i * j.chunk
			hi := min(lo+j.chunk, j.total)
			if j.ranges != nil {
				j.ranges.Range(lo, hi)
			} else {
				j.chunks(lo, hi)
			}
		} else {
			fn(i)
		}
		done++
	}
	// The tasks it ran, at once: one contended atomic a worker, not a task.
	return j.remaining.Add(-done) == 0
}

func newJob() *job { return &job{last: make(chan struct{}, 1)} }

// release lets go of the job: the last holder returns it to the free list.
func (j *job) release() {
	if j.refs.Add(-1) == 0 {
		j.loop = loop{} // hold none of the caller's
		select {
		case idleJobs <- j:
		default:
		}
	}
}

var (
	// jobs are loops offered to the helpers, one entry a helper wanted. A
	// helper that finished a loop watches it for spinFor before it parks
	// (waking a parked goroutine takes tens of microseconds on a virtual
	// machine, longer than most of a model's loops), so that the loops of
	// a run, a few microseconds apart, find it awake. An entry no helper
	// takes before the loop ends is found later, with no task left.
	jobs    = make(chan *job, 64)
	helpers atomic.Int64 // helpers started
	startMu sync.Mutex
	// idleJobs are jobs between loops: a free list, not a sync.Pool, which
	// drops what it holds at each garbage collection (and at random under
	// the race detector) where a loop must allocate nothing. It is filled
	// when the helpers start with more jobs than the offers waiting in jobs
	// can hold and a few loops at once use, so that a loop finds one there
	// even while helpers on busy cores are slow to let go of offers.
	idleJobs = make(chan *job, 4*cap(jobs))
)

// spinFor is how long a helper that finished a loop watches for the next
// before it parks.
const spinFor = 200 * time.Microsecond

// startHelpers makes sure n helpers run.
func startHelpers(n int) {
	if int(helpers.Load()) >= n {
		return
	}
	startMu.Lock()
	defer startMu.Unlock()
	if helpers.Load() == 0 {
		for range 2 * cap(jobs) {
			idleJobs <- newJob()
		}
	}
	for int(helpers.Load()) < n {
		helpers.Add(1)
		go helper()
	}
}

func helper() {
	for {
		j := nextJob()
		if j.work() {
			j.last <- struct{}{}
		}
		j.release()
	}
}

// nextJob returns the next loop offered: one already there, one offered
// while the helper spins (yielding its core to any other goroutine that
// wants it), or, after spinFor, one it parks for.
func nextJob() *job {
	select {
	case j := <-jobs:
		return j
	default:
	}
	start := time.Now()
	for i := 0; ; i++ {
		select {
		case j := <-jobs:
			return j
		default:
		}
		if i%64 == 63 && time.Since(start) > spinFor {
			return <-jobs
		}
		runtime.Gosched()
	}
}

// run runs l on the caller and up to workers-1 idle helpers, and returns
// when every task has run.
func run(l loop, workers int) {
	startHelpers(runtime.GOMAXPROCS(0) - 1)
	var j *job
	select {
	case j = <-idleJobs:
	default:
		j = newJob()
	}
	j.loop = l
	j.next.Store(0)
	j.remaining.Store(int64(l.n))
	j.refs.Store(1)
	for range min(workers-1, int(helpers.Load())) {
		j.refs.Add(1) // before the offer: a helper may let go at once
		sent := false
		select {
		case jobs <- j:
			sent = true
		default: // offers enough wait already
		}
		if !sent {
			j.refs.Add(-1)
			break
		}
	}
	if !j.work() {
		<-j.last // a helper finishes the last task
	}
	j.release()
}
