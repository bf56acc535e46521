// Package peak measures the ceilings the benchmarks report their rates
// against: the float32 multiply-add rate of the CPU's widest fused
// multiply-add (FMA) unit, on one core and on several at once.
//
// A benchmark that says "40% of peak" needs the peak measured on the same
// machine in the same run, not taken from a data sheet: clocks under load,
// an AVX-512 unit split in two halves (AMD Zen 4) or a virtual machine's
// share of a core all change it. The loop here is the rate's upper bound: 12
// independent accumulators of FMAs (more than an FMA's latency times its
// pipes on current x86 cores), no loads, no stores.
package peak

import (
	"runtime"
	"sync"
	"time"
)

// FLOPs is a measured floating-point rate.
type FLOPs struct {
	// PerSecond is the rate: 2 floating-point operations per multiply-add.
	PerSecond float64
	// ISA names the instructions that reached it: "avx512", "avx2" (with
	// FMA) or "go" (the compiler's scalar code, where neither exists).
	ISA string
	// Threads is the number of goroutines (each locked to a thread) that ran
	// the loop at once.
	Threads int
}

// FMA measures the FMA rate with threads goroutines running at once, each
// for about d (the fastest of three rounds, each d/3 long).
func FMA(threads int, d time.Duration) FLOPs {
	threads = max(threads, 1)
	isa, perIter, loop := fmaLoop()
	// Calibrate: iterations for about d/3 on one thread.
	iters := 1 << 16
	for {
		start := time.Now()
		loop(iters)
		if el := time.Since(start); el > 2*time.Millisecond {
			iters = max(1, int(float64(iters)*float64(d/3)/float64(el)))
			break
		}
		iters *= 4
	}
	best := 0.0
	for range 3 {
		var wg sync.WaitGroup
		start := time.Now()
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				loop(iters)
			}()
		}
		wg.Wait()
		rate := float64(threads) * float64(iters) * perIter / time.Since(start).Seconds()
		best = max(best, rate)
	}
	return FLOPs{PerSecond: best, ISA: isa, Threads: threads}
}

// goLoop is the portable loop: 8 independent scalar accumulators.
func goLoop(n int) {
	var a0, a1, a2, a3, a4, a5, a6, a7 float32
	x, y := sink, sink+1
	for range n {
		a0 = a0*x + y
		a1 = a1*x + y
		a2 = a2*x + y
		a3 = a3*x + y
		a4 = a4*x + y
		a5 = a5*x + y
		a6 = a6*x + y
		a7 = a7*x + y
	}
	sink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
}

// sink keeps the compiler from removing goLoop's work.
var sink float32
