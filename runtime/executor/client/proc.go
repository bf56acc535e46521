package client

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
)

// proc is one executor process (or, with Config.Socket, one executor this
// client does not manage).
type proc struct {
	path    string
	cmd     *exec.Cmd // nil: not ours
	dir     string    // socket directory, removed when the process is gone
	socket  string
	welcome protocol.Welcome
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
	stderr  *tail
	stopped sync.Once
	cleaned chan struct{} // closed when stop has finished: process gone, directory removed
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// status says how the process ended, with the end of its stderr.
func (p *proc) status() string {
	if p.cmd == nil || !p.exited() {
		return ""
	}
	s := "exited"
	if p.waitErr != nil {
		s = p.waitErr.Error()
	}
	if t := strings.TrimSpace(p.stderr.String()); t != "" {
		s += "; stderr: " + t
	}
	return s
}

// start runs the executor and connects the first session to it.
func (c *Client) start(ctx context.Context) (*proc, *session, error) {
	if c.cfg.Socket != "" {
		p := &proc{path: c.cfg.Socket, socket: c.cfg.Socket, done: make(chan struct{})}
		s, err := c.dial(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		p.welcome = s.welcome
		return p, s, nil
	}
	path := c.cfg.Path
	if path == "" {
		var err error
		if path, err = Find(""); err != nil {
			return nil, nil, err
		}
	}
	dir, sock, err := protocol.NewSocketDir()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	p := &proc{path: path, dir: dir, socket: sock, done: make(chan struct{}), stderr: &tail{max: 4 << 10}}
	args := append([]string{"serve", "--socket=" + sock}, c.cfg.Args...)
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = append(append(os.Environ(), c.cfg.Env...), protocol.EnvParent+"="+strconv.Itoa(os.Getpid()))
	var errOut io.Writer = os.Stderr
	if c.cfg.Stderr != nil {
		errOut = c.cfg.Stderr
	}
	p.cmd.Stdout = io.MultiWriter(errOut, p.stderr)
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("%w: start %s: %v", ErrUnavailable, path, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()

	deadline := time.Now().Add(c.cfg.StartTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	delay := 2 * time.Millisecond
	var stoppedSince time.Time
	for {
		if p.exited() {
			p.stop(0)
			return nil, nil, fmt.Errorf("%w: executor %s exited before serving: %s", ErrUnavailable, path, p.status())
		}
		// The socket file appears at bind, a moment before listen: until
		// then connecting is refused, so keep trying.
		if pc, err := protocol.Dial(ctx, sock); err == nil {
			dctx, cancel := context.WithDeadline(ctx, deadline)
			s, err := c.handshake(dctx, p, pc)
			cancel()
			if err == nil {
				p.welcome = s.welcome
				return p, s, nil
			}
			if p.exited() {
				continue // report how it ended
			}
			p.stop(time.Second)
			return nil, nil, fmt.Errorf("%w: executor %s: %w", ErrUnavailable, path, err)
		}
		// Stopped (SIGSTOP) before it listens: given up after StallAfter.
		if st := procState(p.cmd.Process.Pid); st == 'T' || st == 't' {
			if stoppedSince.IsZero() {
				stoppedSince = time.Now()
			} else if time.Since(stoppedSince) >= c.cfg.StallAfter {
				p.stop(0)
				return nil, nil, fmt.Errorf("%w: executor %s: the process was stopped (SIGSTOP or a debugger) for %v while starting", ErrUnavailable, path, time.Since(stoppedSince).Round(time.Millisecond))
			}
		} else {
			stoppedSince = time.Time{}
		}
		if time.Now().After(deadline) {
			p.stop(time.Second)
			if err := ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("%w: executor %s: starting: %v", ErrUnavailable, path, err)
			}
			return nil, nil, fmt.Errorf("%w: executor %s did not open its socket within %v", ErrUnavailable, path, c.cfg.StartTimeout)
		}
		select {
		case <-time.After(delay):
		case <-p.done:
		}
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

// stop ends the process: SIGTERM, then SIGKILL after grace (at once if
// grace is 0); then it removes the socket directory. It returns at once and
// finishes in the background; the channel it returns is closed when done.
func (p *proc) stop(grace time.Duration) <-chan struct{} {
	p.stopped.Do(func() {
		p.cleaned = make(chan struct{})
		if p.cmd == nil {
			close(p.cleaned)
			return
		}
		if !p.exited() {
			if grace > 0 {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				// A stopped executor (SIGSTOP) handles it once continued.
				_ = p.cmd.Process.Signal(syscall.SIGCONT)
			} else {
				_ = p.cmd.Process.Kill()
			}
		}
		go func() {
			if grace > 0 {
				select {
				case <-p.done:
				case <-time.After(grace):
					_ = p.cmd.Process.Kill()
				}
			}
			<-p.done
			os.RemoveAll(p.dir)
			close(p.cleaned)
		}()
	})
	return p.cleaned
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
