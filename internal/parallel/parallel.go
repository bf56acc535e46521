// Package parallel runs a loop's iterations on several goroutines: the one
// worker pool of the project's CPU code (the ONNX operators, the float32
// product, k-nearest neighbours, the raster decoders and writers, the
// shared-memory copy).
//
// A loop is n tasks. Each cuts them into one contiguous share per
// goroutine and hands out each share's tasks one at a time from its own
// counter: a goroutine takes its own share's first, then what is left of
// the others' (tasks of less work than claimWork in runs), so that one on
// a busy core takes fewer, and the caller takes the same tasks at every
// loop (a network's layers: the images whose inputs the layer before wrote
// into its own core's cache). For cuts the loop into one contiguous run
// per goroutine. Both choose how many goroutines the loop is
// worth from the work of one task (Workers): no more than GOMAXPROCS and
// the tasks, and one per MinWork units of work, so that a small loop stays
// on the calling goroutine (starting one costs about a microsecond). Do,
// DoWith (with state of each goroutine's own, a scratch buffer), DoErr
// (tasks that can fail) and Chunks take the number of goroutines from the
// caller; EachWorker is DoWith with the goroutines and runs Each chooses.
//
// The goroutines are kept between loops (pool.go): a loop offers its tasks
// to them and takes tasks itself, waits for the tasks they took but never
// for one of them to come, and allocates nothing of its own. After a loop
// a helper watches for the next one for a while (200 µs, yielding its core
// to any other goroutine) before it parks: the loops of a model's run
// follow each other by microseconds, and waking a parked goroutine costs
// tens of them on a virtual machine. A caller left waiting for a helper's
// last task watches for it as long before it parks: a caller woken from a
// park runs on the helper's core, away from the data its next loop reads.
// What is left is the caller's function: a function literal that captures
// variables is allocated at each call. ForWith and EachWith (the loop's
// arguments copied into a pooled box, its function one that captures
// nothing) and DoTasks and EachTasks (a Tasks value the caller keeps) are
// the loops that allocate nothing at all, for callers that run thousands
// of loops (a model's run).
//
// Every function returns when every task has run; fn must be safe to call
// from several goroutines at once for different tasks.
package parallel

import (
	"errors"
	"runtime"
)

// MinWork is the work (elements touched, or multiply-adds) below which a
// loop is not worth another goroutine.
const MinWork = 1 << 14

// Workers is the number of goroutines for n tasks of cost units of work
// each: at most GOMAXPROCS and n, at least 1, and no more than one per
// MinWork units in all.
func Workers(n, cost int) int {
	w := min(runtime.GOMAXPROCS(0), n)
	if byWork := n * max(cost, 1) / MinWork; byWork < w {
		w = byWork
	}
	return max(1, w)
}

// For runs fn(lo, hi) over [0, n) in contiguous runs, one per goroutine,
// on Workers(n, cost) goroutines: cost is the work of one index.
func For(n, cost int, fn func(lo, hi int)) { Chunks(Workers(n, cost), n, fn) }

// Each runs fn(i) for every i in [0, n) on Workers(n, cost) goroutines
// taking tasks from a shared counter (busy cores even out), tasks of less
// than claimWork in runs (grain): cost is the work of one task.
func Each(n, cost int, fn func(i int)) {
	w := Workers(n, cost)
	if w == 1 || n <= 0 {
		Do(1, n, fn)
		return
	}
	run(loop{n: n, each: fn, grain: grain(n, cost, w)}, w)
}

// claimWork is the least work (units of cost) that a worker of Each,
// EachTasks or EachWith takes from the shared counter at once: tasks
// cheaper than that are taken in runs. Each claim is an atomic add on a
// cache line that every core writes; tasks of a few hundred nanoseconds
// claimed one at a time spend as long passing the line between the cores
// (a GlobalAveragePool of 5,120 blocks of 4 pixels, the test MobileNetV2's
// at batch 64, took 0.38 ms on two threads against 0.22 on one).
const claimWork = 1 << 12

// grain is the tasks a claim takes: claimWork's worth, but no more than
// leave every one of workers four claims (the cores even out).
func grain(n, cost, workers int) int {
	return max(1, min(claimWork/max(cost, 1), n/(4*workers)))
}

// Do runs fn(i) for every i in [0, n) on up to workers goroutines (0:
// GOMAXPROCS), which take the tasks in order from a shared counter. With one
// worker it runs them on the calling goroutine.
func Do(workers, n int, fn func(i int)) {
	if n <= 0 {
		return
	}
	workers = limit(workers, n)
	if workers == 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	run(loop{n: n, each: fn}, workers)
}

// Tasks are a loop's tasks as a value: Task(i) runs task i. A function
// literal that captures variables is allocated anew at each call of the
// loop; a Tasks whose value is made once and kept (a kernel's, pooled)
// lets a loop that runs many times allocate nothing.
type Tasks interface {
	Task(i int)
}

// EachTasks is Each with t's tasks (cheap ones in runs, as Each).
func EachTasks(n, cost int, t Tasks) {
	w := Workers(n, cost)
	if w == 1 || n <= 0 {
		DoTasks(1, n, t)
		return
	}
	run(loop{n: n, tasks: t, grain: grain(n, cost, w)}, w)
}

// DoTasks is Do with t's tasks.
func DoTasks(workers, n int, t Tasks) {
	if n <= 0 {
		return
	}
	workers = limit(workers, n)
	if workers == 1 {
		for i := range n {
			t.Task(i)
		}
		return
	}
	run(loop{n: n, tasks: t}, workers)
}

// DoErr is Do for tasks that can fail: every task runs, whatever the others
// return, and the result is their errors joined in task order
// (errors.Join), nil when none failed.
func DoErr(workers, n int, fn func(i int) error) error {
	if n <= 0 {
		return nil
	}
	errs := make([]error, n)
	Do(workers, n, func(i int) { errs[i] = fn(i) })
	return errors.Join(errs...)
}

// DoWith is Do with state of each goroutine's own: every goroutine calls
// newWorker once and runs the tasks it takes with the function it returns.
func DoWith(workers, n int, newWorker func() func(i int)) {
	if n <= 0 {
		return
	}
	workers = limit(workers, n)
	if workers == 1 {
		fn := newWorker()
		for i := range n {
			fn(i)
		}
		return
	}
	run(loop{n: n, newWorker: newWorker}, workers)
}

// EachWorker is DoWith on Workers(n, cost) goroutines, tasks of less than
// claimWork in runs (as Each): cost is the work of one task.
func EachWorker(n, cost int, newWorker func() func(i int)) {
	w := Workers(n, cost)
	if w == 1 || n <= 0 {
		DoWith(1, n, newWorker)
		return
	}
	run(loop{n: n, newWorker: newWorker, grain: grain(n, cost, w)}, w)
}

// Chunks runs fn(lo, hi) over [0, n) cut into as many contiguous runs as
// workers, on up to workers goroutines (0: GOMAXPROCS; a goroutine takes
// another's run where that one is busy elsewhere); with one worker, fn(0,
// n) on the calling goroutine.
func Chunks(workers, n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	workers = limit(workers, n)
	if workers == 1 {
		fn(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	run(loop{n: (n + chunk - 1) / chunk, chunk: chunk, total: n, chunks: fn}, workers)
}

func limit(workers, n int) int {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return max(1, min(workers, n))
}
