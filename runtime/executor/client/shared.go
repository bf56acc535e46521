package client

import (
	"errors"
	"path/filepath"
	"sync"
)

// The process-wide clients: one per executor binary, shared by every bundle
// of the process.

var shared struct {
	mu       sync.Mutex
	m        map[string]*Client
	shutdown bool // ShutdownShared: no new executors
}

// Shared returns the process-wide client of the executor Find(explicit)
// finds (explicit being the --gpu_executor value, possibly empty).
func Shared(explicit string) (*Client, error) {
	path, err := Find(explicit)
	if err != nil {
		return nil, err
	}
	return SharedAt(path), nil
}

// SharedAt returns the process-wide client of the executor binary at path:
// one per path, so every goroutine of the process shares its executor.
func SharedAt(path string) *Client {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.m == nil {
		shared.m = map[string]*Client{}
	}
	c := shared.m[path]
	if c == nil {
		c = New(sharedConfig(path))
		if shared.shutdown {
			c.Close() // its calls fail with ErrClosed; it starts nothing
		} else {
			shared.m[path] = c
		}
	}
	return c
}

// ShutdownShared closes every shared client, as CloseShared, and makes the
// clients Shared and SharedAt return from then on closed ones (their calls
// fail with ErrClosed), so that no executor is started by a process that is
// exiting (its socket directory would be left behind).
func ShutdownShared() error {
	shared.mu.Lock()
	shared.shutdown = true
	shared.mu.Unlock()
	return CloseShared()
}

// CloseShared closes every shared client (stopping their executors); a
// later Shared returns a new one.
func CloseShared() error {
	shared.mu.Lock()
	m := shared.m
	shared.m = nil
	shared.mu.Unlock()
	var errs []error
	for _, c := range m {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
