package client

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
)

// Every call has a deadline and a liveness check, so that an executor that
// stops answering (stopped with SIGSTOP, hung in a driver call, deadlocked)
// costs a bounded wait, never a hung pipeline.
//
// The deadline of a request is derived from its size and the rate the op
// was measured at on this client: Config.DeadlineFactor times the slowest
// recent nanoseconds per byte (inputs plus outputs) times the request's
// bytes, and never less than Config.CallFloor; an op not measured yet gets
// 4 x CallFloor. The liveness check looks at the executor's process while a
// request is out: stopped (SIGSTOP, a debugger) or a zombie for
// Config.StallAfter is a stall at once, without waiting for the deadline.
//
// A stalled executor is killed (SIGKILL) and replaced, and the call is
// sent again once, as for a crash; the error of a call that stalls twice
// is a *StallError ("GPU executor stalled for N s"), which wraps
// ErrExecutorDied: under --backend=auto the step runs the batch on the CPU,
// under gpu the batch fails with it.

// EnvCallFloor, when set, is Config.CallFloor of the process's shared
// clients (a Go duration, e.g. 30s).
const EnvCallFloor = "BEAMGPU_EXECUTOR_CALL_FLOOR"

// EnvStallAfter, when set, is Config.StallAfter of the process's shared
// clients (a Go duration, e.g. 3s).
const EnvStallAfter = "BEAMGPU_EXECUTOR_STALL_AFTER"

// envDuration is the duration of environment variable name, or 0 (the
// default) where it is not set or not a positive duration.
func envDuration(name string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		slog.Warn("beamgpu: ignoring an environment variable: want a positive duration, e.g. 30s", "variable", name, "value", v)
		return 0
	}
	return d
}

// Defaults of Config's deadline settings.
const (
	DefaultCallFloor      = 30 * time.Second
	DefaultStallAfter     = 3 * time.Second
	DefaultDeadlineFactor = 20
)

// StallError is a call the executor did not answer in time.
type StallError struct {
	Op string
	// After is how long the call waited.
	After time.Duration
	// PID is the executor's process id.
	PID int
	// Why says what was seen: the deadline passed, or the process was stopped.
	Why string
}

func (e *StallError) Error() string {
	return fmt.Sprintf("GPU executor stalled for %d s (op %q, executor pid %d: %s)", int(e.After.Round(time.Second)/time.Second), e.Op, e.PID, e.Why)
}

// Unwrap makes a stall a death (ErrExecutorDied): retried once on a new
// executor, and then handled as the executor being unavailable.
func (e *StallError) Unwrap() error { return ErrExecutorDied }

// rates are the measured costs of ops: the slowest recent nanoseconds per
// byte of each op.
type rates struct {
	mu sync.Mutex
	m  map[string]float64
}

// observe records that a call of op moving n bytes took d. The rate kept
// is the slowest seen, decaying by a tenth a call towards the newer ones.
func (r *rates) observe(op string, n int64, d time.Duration) {
	if n <= 0 {
		n = 1
	}
	v := float64(d.Nanoseconds()) / float64(n)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]float64{}
	}
	r.m[op] = max(v, 0.9*r.m[op])
}

// deadline is how long a call of op moving n bytes may take.
func (c *Client) deadline(op string, n int64) time.Duration {
	c.rates.mu.Lock()
	v, ok := c.rates.m[op]
	c.rates.mu.Unlock()
	if !ok {
		return 4 * c.cfg.CallFloor
	}
	return max(c.cfg.CallFloor, time.Duration(float64(c.cfg.DeadlineFactor)*v*float64(max(n, 1))))
}

// procState returns the state letter of process pid (/proc/PID/stat: R,
// S, D, T stopped, t traced, Z zombie), or 0 where it cannot be read.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// watch checks the liveness of the executor of s while a request is out,
// until stop is closed: a process stopped or a zombie for StallAfter is a
// stall; watch then wakes the blocked read and reports why on stalled.
func (s *session) watch(stop <-chan struct{}, stalled chan<- string) {
	watchPID(int(s.welcome.PID), s.c.cfg.StallAfter, stop, func(why string) {
		stalled <- why
		s.pc.SetDeadline(longAgo)
	})
}

// watchPID calls onStall once, and returns, when process pid has been
// stopped or a zombie for stallAfter; it returns when stop is closed.
func watchPID(pid int, stallAfter time.Duration, stop <-chan struct{}, onStall func(why string)) {
	if pid <= 0 {
		return
	}
	tick := time.NewTicker(max(stallAfter/10, 20*time.Millisecond))
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		st := procState(pid)
		if st != 'T' && st != 't' && st != 'Z' {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
			continue
		}
		if time.Since(since) >= stallAfter {
			what := "stopped (SIGSTOP or a debugger)"
			if st == 'Z' {
				what = "exited, not reaped"
			}
			onStall(fmt.Sprintf("the process was %s for %v", what, time.Since(since).Round(time.Millisecond)))
			return
		}
	}
}

// stalled kills the executor p that stalled, at once, and retires it, so
// that the retry starts a new one.
func (c *Client) stalled(p *proc, err error) {
	p.stop(0)
	c.mu.Lock()
	c.retireLocked(p, err.Error())
	c.mu.Unlock()
}

// logRetired says that an executor was retired, and why: the next call
// starts a new one.
func logRetired(p *proc, why string) {
	slog.Warn("GPU executor retired; the next call starts a new one", "pid", p.welcome.PID, "reason", why)
}
