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
	// grain is the tasks (each, tasks, newWorker) a worker takes from the
	// counter at once (0: one).
	grain int
}

// job is a loop running: its tasks taken from next, done when none is
// remaining. The caller waits for the tasks, not for the helpers it sent
// the job: a helper that wakes after the last task was taken (a parked
// goroutine takes tens of microseconds to wake on a virtual machine, more
// than many loops last) finds none and lets go of the job, and the last of
// the caller and the helpers to let go of it returns it to the free list
// (idleJobs).
//
// A caller left waiting for a helper's last task watches the job's state
// for waitFor before it parks: a goroutine woken from a channel is queued
// on the waker's processor, so a caller that parked for every loop would
// run its next layer on the helper's core, its activations in the other
// core's cache (a model's run of many short loops moved from core to core
// at each: MobileNetV3-small at batch 1 took 1.5 times its time on two
// threads as on one).
type job struct {
	loop
	shares    []share // the tasks, a run of them for each worker offered the job (of shareBuf)
	shareBuf  [maxShares]share
	joined    atomic.Int32  // the helpers that came: the next one's share
	remaining atomic.Int64  // tasks not finished
	refs      atomic.Int32  // the caller and the helpers sent the job, until each lets go
	state     atomic.Int32  // running, then finished, or parked (the caller waits on last) then finished
	last      chan struct{} // a helper that finishes the last task after the caller parked tells it (buffered)
}

// A job's state.
const (
	running  int32 = iota // tasks remain or run
	parked                // the caller waits on last
	finished              // the last task finished
)

// work takes the job's tasks until there are none left and reports whether
// the tasks it ran were the last to finish: first those of share w (the
// caller's is 0, a helper's the order it came in), then what is left of
// the others'. It reads the loop's functions only once it has a task: a
// helper that comes late touches nothing of its caller's.
func (j *job) work(w int) (last bool) {
	k := 0
	i, hi := j.claim(w, &k)
	if i < 0 {
		return false
	}
	var done int64
	if j.chunks != nil || j.ranges != nil {
		for ; i >= 0; i, hi = j.claim(w, &k) {
			for ; i < hi; i++ {
				lo := int(i) * j.chunk
				hi := min(lo+j.chunk, j.total)
				if j.ranges != nil {
					j.ranges.Range(lo, hi)
				} else {
					j.chunks(lo, hi)
				}
				done++
			}
		}
	} else {
		fn := j.each
		if j.newWorker != nil {
			fn = j.newWorker()
		}
		if j.tasks != nil {
			fn = j.tasks.Task // a method value kept on this goroutine's stack
		}
		for ; i >= 0; i, hi = j.claim(w, &k) {
			for ; i < hi; i++ {
				fn(int(i))
				done++
			}
		}
	}
	// The tasks it ran, at once: one contended atomic a worker, not a task.
	return j.remaining.Add(-done) == 0
}

// claim takes worker w's next run of tasks, [lo, hi): from share w+*k
// (modulo the shares) on, *k the shares it found spent; lo is -1 where
// every share is.
func (j *job) claim(w int, k *int) (lo, hi int64) {
	g := int64(max(1, j.grain))
	for ns := len(j.shares); *k < ns; *k++ {
		s := &j.shares[(w+*k)%ns]
		if i := s.next.Add(g) - g; i < s.end {
			return i, min(i+g, s.end)
		}
	}
	return -1, 0
}

// share is a run of a loop's tasks, [next, end), that one worker takes
// first: a worker's tasks at one loop are then, as far as the cores keep
// pace, those of the same indices at the next (a network's layers cut the
// same way: the same images), whose inputs the loop before wrote into its
// own core's cache. Tasks handed out from one counter went to whichever
// core came first: the test MobileNetV2 at batch 64 took longer on two
// threads than on one (2-core AMD EPYC VM, Zen 5: a cache line written by
// the other core read at a quarter of the rate of one's own). Its own
// cache line: the workers claim from their shares at once.
type share struct {
	next atomic.Int64
	end  int64
	_    [48]byte
}

// maxShares bounds a loop's shares: on more cores, workers past it start
// at the share of their index less a multiple of it (a job is reused, never
// allocated by a loop: its shares are its own array).
const maxShares = 16

// cut splits the job's n tasks into shares contiguous runs (at most
// maxShares).
func (j *job) cut(shares int) {
	shares = min(shares, maxShares, max(j.n, 1))
	j.shares = j.shareBuf[:shares]
	for s := range shares {
		j.shares[s].next.Store(int64(s * j.n / shares))
		j.shares[s].end = int64((s + 1) * j.n / shares)
	}
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
// before it parks, and waitFor how long a caller watches for the last of
// its loop's tasks that helpers run.
const (
	spinFor = 200 * time.Microsecond
	waitFor = 200 * time.Microsecond
)

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
		if j.work(int(j.joined.Add(1))) {
			j.finish()
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

// run runs l on the caller and up to workers-1 idle helpers (no more than
// GOMAXPROCS less one: a helper offered the loop where no processor is free
// would run only once the caller stops watching), and returns when every
// task has run.
func run(l loop, workers int) {
	procs := runtime.GOMAXPROCS(0)
	startHelpers(procs - 1)
	var j *job
	select {
	case j = <-idleJobs:
	default:
		j = newJob()
	}
	j.loop = l
	j.state.Store(running)
	j.remaining.Store(int64(l.n))
	j.refs.Store(1)
	j.joined.Store(0)
	offers := min(workers-1, int(helpers.Load()), procs-1)
	j.cut(offers + 1)
	for range offers {
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
	if !j.work(0) {
		j.wait()
	}
	j.release()
}

// finish tells the caller, by the state or, if it parked, on last, that
// the helper finished the job's last task.
func (j *job) finish() {
	if j.state.Swap(finished) == parked {
		j.last <- struct{}{}
	}
}

// wait returns when the helper that runs the job's last task finishes it:
// the caller watches the state for waitFor, keeping its core, then parks
// until the helper tells it (the state makes the helper send only to a
// caller that parked, so no signal is left for the job's next loop).
func (j *job) wait() {
	start := time.Now()
	for i := 0; j.state.Load() != finished; i++ {
		if i%64 == 63 && time.Since(start) > waitFor {
			if j.state.CompareAndSwap(running, parked) {
				<-j.last
			}
			return
		}
	}
}
