package job

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"
)

// StartProgress prints "name: running, 12s elapsed" to w every interval
// until the returned func is called. An interval of 0 prints nothing.
func StartProgress(w io.Writer, name string, interval time.Duration) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "%s: running, %s elapsed\n", name, time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done) }
}

// startCPUProfile starts a CPU profile into path (--cpuprofile); the
// returned function stops it and closes the file. An empty path profiles
// nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile %s: %w", path, err)
		}
		return nil
	}, nil
}
