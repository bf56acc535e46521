//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// cpuSeconds is the CPU time (user and system) of the process so far: on a
// shared machine it says more than the wall time. It includes the garbage
// collector's work on other threads.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
