//go:build !unix

package onnx_test

import "time"

// cpuTime is 0 where getrusage is not: BenchmarkZoo then reports no
// cpu_ms/run.
func cpuTime() time.Duration { return 0 }
