package peak

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every loop this machine can run gives a positive rate, and the portable
// loop's work is not optimised away (its rate is finite).
func TestFMA(t *testing.T) {
	one := FMA(1, 30*time.Millisecond)
	require.Positive(t, one.PerSecond)
	require.Equal(t, 1, one.Threads)
	require.Contains(t, []string{"avx512", "avx2", "go"}, one.ISA)
	isa, per, loop := fmaLoop()
	require.Equal(t, one.ISA, isa)
	require.Positive(t, per)
	loop(0) // no iterations: returns at once
	start := time.Now()
	goLoop(1 << 20)
	require.Positive(t, time.Since(start), "the portable loop ran")
}

func ExampleFMA() {
	one := FMA(1, 60*time.Millisecond)
	all := FMA(runtime.GOMAXPROCS(0), 60*time.Millisecond)
	fmt.Println(one.PerSecond > 0, all.PerSecond > 0)
	// Output: true true
}

func BenchmarkFMA(b *testing.B) {
	for b.Loop() {
		r := FMA(1, 30*time.Millisecond)
		b.ReportMetric(r.PerSecond/1e9, "GFLOP/s")
	}
}
