package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/shm"
)

// Config configures a Client.
type Config struct {
	// Path is the executor binary; empty means Find("").
	Path string
	// Socket, when set, connects to an executor already serving there
	// instead of starting one (tests, or an executor run by hand). The
	// client does not manage that process.
	Socket string
	// Args are extra arguments of "serve", e.g. "--max_concurrent=4".
	Args []string
	// Env are extra environment variables of the executor ("K=V"), on top
	// of this process's.
	Env []string
	// StartTimeout bounds the executor's start (until its handshake); 0
	// means 30s.
	StartTimeout time.Duration
	// MaxArena bounds one connection's shared-memory arena (inputs plus
	// outputs of one batch); 0 means 16 GiB.
	MaxArena int64
	// MaxIdle is how many idle connections (each with its arena) are kept
	// for reuse; 0 means 16.
	MaxIdle int
	// Stderr receives the executor's output; nil means os.Stderr.
	Stderr io.Writer
	// CallFloor is the least deadline of a call (see deadline.go); 0 means
	// DefaultCallFloor.
	CallFloor time.Duration
	// DeadlineFactor multiplies a call's expected time (its bytes at the
	// op's measured rate) into its deadline; 0 means DefaultDeadlineFactor.
	DeadlineFactor int
	// StallAfter is how long the executor's process may be seen stopped
	// during a call before the call is a stall; 0 means DefaultStallAfter.
	StallAfter time.Duration
}

// Client runs ops on one executor process, starting it on first use and
// again after it died. It is safe for concurrent use.
type Client struct {
	cfg Config

	mu     sync.Mutex
	cur    *proc
	idle   []*session
	closed bool
	starts int

	retries atomic.Int64
	rates   rates
}

// New returns a client for the executor cfg describes; nothing is started
// before the first call.
func New(cfg Config) *Client {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.MaxArena <= 0 {
		cfg.MaxArena = 16 << 30
	}
	if cfg.MaxIdle <= 0 {
		cfg.MaxIdle = 16
	}
	if cfg.CallFloor <= 0 {
		cfg.CallFloor = DefaultCallFloor
	}
	if cfg.DeadlineFactor <= 0 {
		cfg.DeadlineFactor = DefaultDeadlineFactor
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = DefaultStallAfter
	}
	return &Client{cfg: cfg}
}

// Info describes the running executor.
type Info struct {
	// Path is the binary (or, with Config.Socket, the socket).
	Path string
	// Socket is the executor's socket.
	Socket string
	// PID is the executor's process id.
	PID int
	// Version is the protocol version.
	Version uint16
	// Device describes the device; empty means none. With several devices
	// it sums them up; Devices lists them by ordinal.
	Device  string
	Devices []string
	// NoDevice says why there is none, where the executor says.
	NoDevice string
	// Ops are the op names served.
	Ops []string
	// Limits are the executor's limits.
	Limits protocol.Limits
}

// Info starts the executor if needed and describes it.
func (c *Client) Info(ctx context.Context) (Info, error) {
	s, err := c.get(ctx)
	if err != nil {
		return Info{}, err
	}
	p := s.p
	c.put(s)
	w := p.welcome
	return Info{Path: p.path, Socket: p.socket, PID: int(w.PID), Version: w.Version, Device: w.Device, Devices: w.Devices, NoDevice: w.NoDevice, Ops: w.Ops, Limits: w.Limits}, nil
}

// Placement says where the executor ran one batch: the device's ordinal,
// the time the batch ran there, and its bytes (inputs and outputs).
type Placement struct {
	Device int
	Busy   time.Duration
	Bytes  int64
}

type placementKey struct{}

// WithPlacement returns ctx with f, which the calls made with it call with
// the placement of each batch the executor ran (a split batch's halves each
// call it). stepbeam counts them per device in the step's metrics.
func WithPlacement(ctx context.Context, f func(Placement)) context.Context {
	return context.WithValue(ctx, placementKey{}, f)
}

// DeviceStats starts the executor if needed and returns its devices'
// statistics: batches, bytes, busy time, side data filled, and whether each
// still serves.
func (c *Client) DeviceStats(ctx context.Context) ([]protocol.DeviceStats, error) {
	s, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	ans, err := s.roundTrip(ctx, protocol.Stats{}, "stats", c.cfg.CallFloor)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("GPU executor: stats: %w", err)
	}
	c.put(s)
	r, ok := ans.(protocol.StatsReply)
	if !ok {
		return nil, fmt.Errorf("GPU executor: stats: %w: answer %v", protocol.ErrFrame, ans)
	}
	return r.Devices, nil
}

// Stats counts what the client did.
type Stats struct {
	// Starts is how many executor processes it started (or connections to
	// Config.Socket it made anew).
	Starts int
	// Restarts is Starts less the first.
	Restarts int
	// Retries is how many calls it retried after the executor died.
	Retries int
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Starts: c.starts, Retries: int(c.retries.Load())}
	if c.starts > 1 {
		st.Restarts = c.starts - 1
	}
	return st
}

// Close stops the executor (SIGTERM: running batches may finish; SIGKILL
// after 5s), closes the idle connections and waits for the process to exit
// and its socket directory to be removed. Calls in flight fail.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	for _, s := range c.idle {
		s.close()
	}
	c.idle = nil
	var done <-chan struct{}
	if c.cur != nil {
		done = c.cur.stop(5 * time.Second)
		c.cur = nil
	}
	c.mu.Unlock()
	if done != nil {
		<-done
	}
	return nil
}

// get returns an idle session of the current executor, or a new one,
// starting the executor if there is none or it has exited.
//
// An executor that has died may not have been reaped yet (its exit is seen
// a moment later, later still on a loaded machine), and then its socket
// refuses connections. Such an executor is retired here and a new one
// started, before the batch is sent: a death that a restart fixes costs the
// caller a start, never its batch.
func (c *Client) get(ctx context.Context) (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for replaced := false; ; replaced = true {
		if c.closed {
			return nil, ErrClosed
		}
		if c.cur != nil && c.cur.exited() {
			c.retireLocked(c.cur, "it exited: "+c.cur.status())
		}
		if c.cur == nil {
			p, s, err := c.start(ctx)
			if err != nil {
				return nil, err
			}
			c.cur = p
			c.starts++
			return s, nil
		}
		for len(c.idle) > 0 {
			s := c.idle[len(c.idle)-1]
			c.idle = c.idle[:len(c.idle)-1]
			if s.p == c.cur && time.Since(s.idleSince) < MaxIdleTime {
				return s, nil
			}
			s.close()
		}
		s, err := c.dial(ctx, c.cur)
		if err == nil || replaced || ctx.Err() != nil {
			return s, err
		}
		// The current executor does not take connections: it is dead or
		// dying. Retire it; the next turn starts another.
		c.retireLocked(c.cur, err.Error())
	}
}

// put returns a session to the pool, or closes it.
func (c *Client) put(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || s.broken || s.p != c.cur || len(c.idle) >= c.cfg.MaxIdle {
		s.close()
		return
	}
	s.idleSince = time.Now()
	c.idle = append(c.idle, s)
}

// MaxIdleTime is how long a pooled connection may stay unused: older ones
// are closed instead of reused, well before the executor closes them
// (server.DefaultIdleTimeout).
const MaxIdleTime = time.Minute

// retireLocked forgets p (the next get starts a new executor) and stops
// it; why is logged.
func (c *Client) retireLocked(p *proc, why string) {
	if c.cur == p {
		c.cur = nil
		logRetired(p, why)
	}
	kept := c.idle[:0]
	for _, s := range c.idle {
		if s.p == p {
			s.close()
		} else {
			kept = append(kept, s)
		}
	}
	c.idle = kept
	p.stop(2 * time.Second)
}

// lost handles a session whose executor died or broke its connection: it
// waits a little for the process to exit, then retires it, so the retry
// starts a new one.
func (c *Client) lost(p *proc, err error) {
	if p.cmd != nil {
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
		}
	}
	c.mu.Lock()
	c.retireLocked(p, err.Error())
	c.mu.Unlock()
}

// Result is the outcome of CallView or CallFill: the op's outputs as views
// of shared memory, valid until Release.
type Result struct {
	// Outputs are the op's outputs. Do not use them after Release.
	Outputs [][]byte

	c        *Client
	s        *session
	released atomic.Bool
}

// Release hands the outputs' memory back for the next call. Call it exactly
// once per Result, when done with Outputs (further calls do nothing).
func (r *Result) Release() {
	if r.released.CompareAndSwap(false, true) {
		r.Outputs = nil
		r.c.put(r.s)
	}
}

// Call runs op on the executor: it copies inputs into shared memory, runs
// the op and returns copies of its outputs (owned by the caller). If the
// executor dies during the call, Call starts a new one and retries once.
func (c *Client) Call(ctx context.Context, op string, params []byte, inputs [][]byte) ([][]byte, error) {
	r, err := c.CallView(ctx, op, params, inputs)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	outs := make([][]byte, len(r.Outputs))
	for i, b := range r.Outputs {
		if len(b) > 0 {
			outs[i] = make([]byte, len(b))
			shm.Copy(outs[i], b)
		}
	}
	return outs, nil
}

// CallView is Call without the copy of the outputs: they are views of
// shared memory, valid until r.Release, which the caller must call.
func (c *Client) CallView(ctx context.Context, op string, params []byte, inputs [][]byte) (*Result, error) {
	sizes := make([]int, len(inputs))
	for i, b := range inputs {
		sizes[i] = len(b)
	}
	return c.CallFill(ctx, op, params, sizes, func(bufs [][]byte) error {
		for i, b := range inputs {
			shm.Copy(bufs[i], b)
		}
		return nil
	})
}

// CallFill is CallView with the inputs written in place: fill gets one
// shared-memory buffer per size and must fill them (it may be called twice:
// again for the retry, if the executor died; it must write the same data).
// The buffers are valid only during fill.
func (c *Client) CallFill(ctx context.Context, op string, params []byte, sizes []int, fill func(in [][]byte) error, opts ...CallOption) (*Result, error) {
	o := callOptions{outHint: -1}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case op == "" || len(op) > protocol.MaxName:
		return nil, fmt.Errorf("GPU executor: op name %q: want 1 to %d bytes", op, protocol.MaxName)
	case len(params) > protocol.MaxParams:
		return nil, fmt.Errorf("GPU executor: op %q: params of %d bytes exceed %d (pass bulk data as inputs)", op, len(params), protocol.MaxParams)
	case len(sizes) > protocol.MaxBuffers:
		return nil, fmt.Errorf("GPU executor: op %q: %d inputs exceed %d", op, len(sizes), protocol.MaxBuffers)
	}
	for _, n := range sizes {
		if n < 0 {
			return nil, fmt.Errorf("GPU executor: op %q: negative input size %d", op, n)
		}
	}
	r, err := c.attempt(ctx, op, params, sizes, fill, o)
	if err == nil || !IsRetryable(err) || ctx.Err() != nil {
		return r, err
	}
	// The executor died: retry once, on a new one.
	c.retries.Add(1)
	r, err2 := c.attempt(ctx, op, params, sizes, fill, o)
	if err2 != nil {
		return nil, fmt.Errorf("%w (retried once; the first attempt failed: %v)", err2, err)
	}
	return r, nil
}

func (c *Client) attempt(ctx context.Context, op string, params []byte, sizes []int, fill func([][]byte) error, o callOptions) (*Result, error) {
	s, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	outs, err := s.call(ctx, op, params, sizes, fill, o)
	if err != nil {
		if IsRetryable(err) {
			s.close()
			var stall *StallError
			if errors.As(err, &stall) {
				c.stalled(s.p, err) // killed here: its status says no more
				return nil, err
			}
			c.lost(s.p, err)
			if st := s.p.status(); st != "" {
				err = fmt.Errorf("%w (executor pid %d %s)", err, s.welcome.PID, st)
			}
			return nil, err
		}
		c.put(s)
		return nil, err
	}
	return &Result{Outputs: outs, c: c, s: s}, nil
}

// CallOption configures one call.
type CallOption func(*callOptions)

type callOptions struct {
	outHint int64 // bytes of the outputs expected; -1: as many as the inputs
}

// OutputHint tells the client how many bytes the outputs are expected to
// take, so that the arena holds them on the first try (by default it offers
// as much as the inputs; too little costs a second round trip, never a
// failure: the executor says how much it needs and the client grows the
// arena).
func OutputHint(bytes int64) CallOption { return func(o *callOptions) { o.outHint = max(0, bytes) } }

// OpError is an op's failure reported by the executor.
type OpError struct {
	Op      string
	Status  protocol.Status
	Message string
}

func (e *OpError) Error() string {
	return fmt.Sprintf("GPU executor: op %q: %s: %s", e.Op, e.Status, e.Message)
}

// Unwrap makes errors.Is match protocol.ErrOutOfMemory,
// protocol.ErrFatal or protocol.ErrNeedSide by status.
func (e *OpError) Unwrap() error {
	switch e.Status {
	case protocol.StatusOutOfMemory:
		return protocol.ErrOutOfMemory
	case protocol.StatusFatal:
		return protocol.ErrFatal
	case protocol.StatusNeedSide:
		return protocol.ErrNeedSide
	}
	return nil
}
