package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The goroutines that share a loop's tasks with its caller are kept
// between loops (helpers): a loop hands itself to the helpers that are
// idle, up to its workers less one, and its caller takes tasks too, so
// that a loop allocates nothing of its own (no goroutine, no counter, no
// wait group: a model's run makes thousands of loops). A helper only takes
// a loop when it is idle (an unbuffered send that does not wait), so a loop
// started inside another loop's task never waits for a helper that is
// waiting for it: where every helper is busy, the caller runs the loop
// alone. There are as many helpers as GOMAXPROCS less one, started when a
// loop first asks for them (GOMAXPROCS raised later starts more; lowered,
// the rest stay idle).

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

// job is a loop running: its tasks taken from next, done when every
// helper given it is through.
type job struct {
	loop
	next atomic.Int64
	done sync.WaitGroup
}

// work takes the job's tasks until there are none left.
func (j *job) work() {
	fn := j.each
	if j.newWorker != nil {
		fn = j.newWorker()
	}
	if j.tasks != nil {
		fn = j.tasks.Task // a method value kept on this goroutine's stack
	}
	for {
		i := int(j.next.Add(1)) - 1
		if i >= j.n {
			return
		}
		if j.chunks != nil || j.ranges != nil {
			lo := i * j.chunk
			hi := min(lo+j.chunk, j.total)
			if j.ranges != nil {
				j.ranges.Range(lo, hi)
			} else {
				j.chunks(lo, hi)
			}
			continue
		}
		fn(i)
	}
}

var (
	jobs    = make(chan *job) // unbuffered: a send succeeds only to an idle helper
	helpers atomic.Int64      // helpers started
	startMu sync.Mutex
	jobPool = sync.Pool{New: func() any { return new(job) }}
)

// startHelpers makes sure n helpers run.
func startHelpers(n int) {
	if int(helpers.Load()) >= n {
		return
	}
	startMu.Lock()
	defer startMu.Unlock()
	for int(helpers.Load()) < n {
		helpers.Add(1)
		go helper()
	}
}

func helper() {
	for j := range jobs {
		j.work()
		j.done.Done()
	}
}

// run runs l on the caller and up to workers-1 idle helpers, and returns
// when every task has run.
func run(l loop, workers int) {
	startHelpers(runtime.GOMAXPROCS(0) - 1)
	j := jobPool.Get().(*job)
	j.loop = l
	j.next.Store(0)
	for range workers - 1 {
		j.done.Add(1)
		sent := false
		select {
		case jobs <- j:
			sent = true
		default:
		}
		if !sent {
			j.done.Done()
			break
		}
	}
	j.work()
	j.done.Wait()
	j.loop = loop{} // hold none of the caller's
	jobPool.Put(j)
}
