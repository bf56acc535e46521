//go:build !unix

package tokenizer

import "time"

var start = time.Now()

// cpuSeconds falls back to the wall time where there is no getrusage.
func cpuSeconds() float64 { return time.Since(start).Seconds() }
