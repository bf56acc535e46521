package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/shm"
)

// DefaultIdleTimeout is how long an idle connection is kept by default.
// The client drops the connections it pools well before (client.MaxIdleTime).
const DefaultIdleTimeout = 5 * time.Minute

// DefaultMaxConcurrent is the default bound on concurrent batches.
const DefaultMaxConcurrent = 2

// Config configures a Server.
type Config struct {
	// Device describes the device the ops run on, as announced in the
	// handshake ("NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)", "cpu-reference");
	// empty means no usable device, and clients will not use the executor.
	Device string
	// Devices describe each device the server places batches on, by
	// ordinal (one per visible GPU; the reference executor's virtual
	// ones); nil means one, Device. With several, MaxConcurrent and
	// MemoryBudget hold for each, and Device, if empty, sums them up.
	Devices []string
	// LeftOut are ordinals of Devices no batch is placed on (serve
	// --devices; bench measures one device so): they are announced, and
	// reported as not serving.
	LeftOut []int
	// NoDevice says why there is no device (Device empty), announced in the
	// handshake so that the clients' reason for not using the GPU names it.
	NoDevice string
	// Ops are the ops served; nil means Registered().
	Ops []Op
	// MaxConcurrent bounds the batches running at once on each device,
	// across connections; 0 means DefaultMaxConcurrent.
	MaxConcurrent int
	// MemoryBudget bounds the bytes of inputs and outputs of the batches
	// running at once on each device; 0 means unlimited.
	MemoryBudget int64
	// HandshakeTimeout bounds the handshake of a new connection; 0 means 10s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection (its arena unmapped) that sends
	// nothing for this long after its handshake while no batch of it runs;
	// 0 means DefaultIdleTimeout, negative never.
	IdleTimeout time.Duration
	// Logger receives the server's diagnostics (serving, connections
	// closed, a device taken out); nil: slog.Default().
	Logger *slog.Logger
	// Poison fills every output buffer with 0xFF bytes (NaN as float32)
	// before the op writes it, so that an op that leaves part of its output
	// unwritten is caught by the equivalence tests instead of passing on
	// stale data.
	Poison bool
	// OnArena, when set, is called with each arena a connection maps (the
	// CUDA executor page-locks it, once per arena, so that batches move
	// between it and the device by DMA); the function it returns is called
	// before the arena is unmapped. An error refuses the arena.
	OnArena func(data []byte) (release func(), err error)
}

// Server serves ops over the executor protocol.
type Server struct {
	cfg   Config
	ops   map[string]Op
	names []string

	placeMu   sync.Mutex
	devices   []*device
	lastFatal error // the error of a batch that finds every device taken out

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	fatalErr error
	shutting atomic.Bool
	connWG   sync.WaitGroup
}

// New checks cfg and returns a server.
func New(cfg Config) (*Server, error) {
	if cfg.Ops == nil {
		cfg.Ops = Registered()
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.MemoryBudget < 0 {
		return nil, fmt.Errorf("executor: memory budget %d is negative", cfg.MemoryBudget)
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Devices) > protocol.MaxDevices {
		return nil, fmt.Errorf("executor: %d devices exceed the protocol's limit of %d", len(cfg.Devices), protocol.MaxDevices)
	}
	names := cfg.Devices
	if len(names) == 0 {
		names = []string{cfg.Device}
	} else if cfg.Device == "" {
		cfg.Device = Summary(names)
	}
	s := &Server{cfg: cfg, ops: map[string]Op{}, conns: map[*conn]struct{}{}}
	for i, name := range names {
		d := &device{ordinal: i, name: name, slots: make(chan struct{}, cfg.MaxConcurrent), gone: make(chan struct{})}
		if cfg.MemoryBudget > 0 {
			d.mem = newWeighted(cfg.MemoryBudget)
		}
		s.devices = append(s.devices, d)
	}
	for _, k := range cfg.LeftOut {
		if k < 0 || k >= len(s.devices) {
			return nil, fmt.Errorf("executor: device %d left out: there are %d", k, len(s.devices))
		}
		d := s.devices[k]
		if !d.dead {
			d.dead, d.deadWhy = true, "left out (--devices)"
			close(d.gone)
		}
	}
	alive := false
	for _, d := range s.devices {
		alive = alive || !d.dead
	}
	if !alive {
		return nil, errors.New("executor: every device is left out")
	}
	s.lastFatal = fmt.Errorf("%w: %w", errNoDevice, protocol.ErrFatal)
	for _, op := range cfg.Ops {
		name := op.Name()
		if name == "" || len(name) > protocol.MaxName {
			return nil, fmt.Errorf("executor: op name %q: want 1 to %d bytes", name, protocol.MaxName)
		}
		if _, dup := s.ops[name]; dup {
			return nil, fmt.Errorf("executor: op %q given twice", name)
		}
		s.ops[name] = op
		s.names = append(s.names, name)
	}
	if len(s.names) > protocol.MaxOps {
		return nil, fmt.Errorf("executor: %d ops exceed the protocol's limit of %d", len(s.names), protocol.MaxOps)
	}
	sort.Strings(s.names)
	return s, nil
}

// Summary describes devices in one line: the one device's description, or
// "N devices: [0] ...; [1] ...".
func Summary(devices []string) string {
	if len(devices) == 1 {
		return devices[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d devices: ", len(devices))
	for i, d := range devices {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "[%d] %s", i, d)
	}
	return b.String()
}

// Limits are the limits the server announces in its handshake.
func (s *Server) Limits() protocol.Limits {
	return protocol.Limits{
		MaxConcurrent: uint32(s.cfg.MaxConcurrent),
		MemoryBudget:  uint64(s.cfg.MemoryBudget),
		MaxFrame:      protocol.MaxFrame,
		MaxBuffers:    protocol.MaxBuffers,
	}
}

// OpNames are the names of the ops served, sorted.
func (s *Server) OpNames() []string { return append([]string(nil), s.names...) }

// Listen listens on the Unix socket path, with the socket at mode 0600 and
// its directory (created if missing) at 0700. A stale socket nobody answers
// on is removed; a live one is an error.
func Listen(path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("executor: listen %s: exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("executor: listen %s: another executor is serving on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// The directory is private (0700) from the start, so the socket's mode
	// between bind and chmod does not matter.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Serve accepts connections on ln and serves each in its own goroutine,
// until Shutdown (it then returns nil once every connection is closed) or
// until an op fails fatally (it then returns that error, wrapping ErrFatal,
// without waiting more than a second for the other connections).
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.ln != nil {
		s.mu.Unlock()
		return errors.New("executor: Serve called twice")
	}
	s.ln = ln
	s.mu.Unlock()
	if s.shutting.Load() {
		ln.Close()
	}
	s.cfg.Logger.Info("executor serving", "ops", len(s.names), "socket", ln.Addr().String(), "device", s.cfg.Device,
		"devices", len(s.devices), "max_concurrent", s.cfg.MaxConcurrent, "memory_budget", s.cfg.MemoryBudget)
	var acceptErr error
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !s.shutting.Load() {
				acceptErr = fmt.Errorf("executor: accept: %w", err)
				s.stop(nil)
			}
			break
		}
		uc, ok := nc.(*net.UnixConn)
		if !ok {
			nc.Close()
			continue
		}
		c := s.newConn(uc)
		s.mu.Lock()
		if s.shutting.Load() {
			s.mu.Unlock()
			uc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	s.mu.Lock()
	fatal := s.fatalErr
	s.mu.Unlock()
	if fatal != nil {
		select {
		case <-done:
		case <-time.After(time.Second):
		}
		return fatal
	}
	<-done
	return acceptErr
}

// Shutdown stops accepting connections, closes idle ones, lets running
// batches finish and answer, then closes their connections. If ctx ends
// first, the remaining connections are closed at once (their ops see their
// context cancelled) and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting.Store(true)
	ln := s.ln
	for c := range s.conns {
		c.closeIfIdle()
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.stop(nil)
		<-done
		return ctx.Err()
	}
}

// stop closes the listener and every connection now, recording a fatal error.
func (s *Server) stop(fatal error) {
	s.mu.Lock()
	if fatal != nil && s.fatalErr == nil {
		s.fatalErr = fatal
	}
	s.shutting.Store(true)
	ln := s.ln
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
}

// conn is one client connection.
type conn struct {
	s      *Server
	pc     *protocol.Conn
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	busy   bool
	closed bool

	// Used only by the serving goroutine.
	arena   *shm.Arena
	arenaID uint32
	release func() // OnArena's, for arena
	pid     uint32
}

func (s *Server) newConn(uc *net.UnixConn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{s: s, pc: protocol.NewConn(uc), ctx: ctx, cancel: cancel}
}

func (c *conn) close() {
	c.mu.Lock()
	c.closeLocked()
	c.mu.Unlock()
}

func (c *conn) closeLocked() {
	if !c.closed {
		c.closed = true
		c.cancel()
		c.pc.Close()
	}
}

func (c *conn) closeIfIdle() {
	c.mu.Lock()
	if !c.busy {
		c.closeLocked()
	}
	c.mu.Unlock()
}

// isBusy reports whether a batch of the connection is running.
func (c *conn) isBusy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.busy
}

// begin marks the connection busy with a batch, unless it is closing.
func (c *conn) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.s.shutting.Load() {
		return false
	}
	c.busy = true
	return true
}

func (c *conn) end() {
	c.mu.Lock()
	c.busy = false
	if c.s.shutting.Load() {
		c.closeLocked()
	}
	c.mu.Unlock()
}

type incoming struct {
	msg protocol.Message
	fd  int
}

func (c *conn) serve() {
	defer c.s.connWG.Done()
	defer func() {
		c.close()
		c.dropArena()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	}()
	if err := c.handshake(); err != nil {
		c.s.cfg.Logger.Warn("executor: handshake failed", "error", err)
		return
	}
	msgs := make(chan incoming)
	go c.read(msgs)
	for in := range msgs {
		switch m := in.msg.(type) {
		case protocol.Arena:
			if err := c.attach(m, in.fd); err != nil {
				return
			}
		case protocol.Stats:
			if err := c.pc.Send(protocol.StatsReply{Devices: c.s.Devices()}); err != nil {
				return
			}
		case protocol.Request:
			if !c.begin() {
				return
			}
			resp, fatal := c.handle(m)
			err := c.pc.Send(resp)
			c.end()
			if fatal != nil {
				c.s.cfg.Logger.Error("executor: op failed fatally; exiting", "op", m.Op, "client_pid", c.pid, "error", fatal)
				c.s.stop(fatal)
				return
			}
			if err != nil {
				return
			}
		default:
			c.s.cfg.Logger.Warn("executor: unexpected message; closing the connection", "client_pid", c.pid, "message", in.msg.Type().String())
			return
		}
	}
}

// read decodes frames into msgs until the connection ends; it then cancels
// the connection's context, so a running op stops when its client is gone.
func (c *conn) read(msgs chan<- incoming) {
	defer close(msgs)
	defer c.cancel()
	for {
		if c.s.cfg.IdleTimeout > 0 {
			c.pc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		}
		m, err := c.pc.Recv()
		if errors.Is(err, os.ErrDeadlineExceeded) && c.ctx.Err() == nil {
			if c.isBusy() {
				continue // the client waits for its batch's answer
			}
			c.s.cfg.Logger.Info("executor: idle connection closed", "client_pid", c.pid, "idle_timeout", c.s.cfg.IdleTimeout)
			return
		}
		if err != nil {
			if c.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				c.s.cfg.Logger.Warn("executor: connection failed", "client_pid", c.pid, "error", err)
			}
			return
		}
		in := incoming{msg: m, fd: -1}
		if _, ok := m.(protocol.Arena); ok {
			if in.fd, err = c.pc.TakeFD(); err != nil {
				c.s.cfg.Logger.Warn("executor: arena not received", "client_pid", c.pid, "error", err)
				return
			}
		}
		select {
		case msgs <- in:
		case <-c.ctx.Done():
			if in.fd >= 0 {
				os.NewFile(uintptr(in.fd), "").Close()
			}
			return
		}
	}
}

func (c *conn) handshake() error {
	c.pc.SetDeadline(time.Now().Add(c.s.cfg.HandshakeTimeout))
	defer c.pc.SetDeadline(time.Time{})
	m, err := c.pc.Recv()
	var ve *protocol.VersionError
	if errors.As(err, &ve) {
		msg := fmt.Sprintf("executor speaks protocol v%d, client speaks v%d", protocol.Version, ve.Client)
		c.pc.Send(protocol.Reject{Version: protocol.Version, Message: msg})
		return err
	}
	if err != nil {
		return err
	}
	h, ok := m.(protocol.Hello)
	if !ok {
		return fmt.Errorf("executor: first frame is %s, want Hello", m.Type())
	}
	c.pid = h.PID
	var devices []string
	if c.s.cfg.Device != "" {
		for _, d := range c.s.devices {
			devices = append(devices, d.name)
		}
	}
	return c.pc.Send(protocol.Welcome{
		Version:  protocol.Version,
		PID:      uint32(os.Getpid()),
		Device:   c.s.cfg.Device,
		Devices:  devices,
		NoDevice: c.s.cfg.NoDevice,
		Ops:      c.s.names,
		Limits:   c.s.Limits(),
	})
}

// attach maps a new arena (replacing the previous one) and acknowledges it.
func (c *conn) attach(m protocol.Arena, fd int) error {
	ack := protocol.ArenaAck{ID: m.ID}
	a, err := shm.Map(fd, int64(m.Size))
	var release func()
	if err == nil && c.s.cfg.OnArena != nil {
		if release, err = c.s.cfg.OnArena(a.Bytes()); err != nil {
			a.Close()
			err = fmt.Errorf("executor: arena of %d bytes: %w", m.Size, err)
		}
	} else if err != nil {
		os.NewFile(uintptr(fd), "").Close()
	}
	if err != nil {
		ack.Status, ack.Message = protocol.StatusError, err.Error()
	} else {
		c.dropArena()
		c.arena, c.arenaID, c.release = a, m.ID, release
	}
	return c.pc.Send(ack)
}

// dropArena releases (OnArena's release) and unmaps the connection's arena.
func (c *conn) dropArena() {
	if c.release != nil {
		c.release()
		c.release = nil
	}
	if c.arena != nil {
		c.arena.Close()
		c.arena = nil
	}
}

// poison fills b with 0xFF bytes at memmove speed (doubling copies).
func poison(b []byte) {
	if len(b) == 0 {
		return
	}
	b[0] = 0xFF
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

func overlap(a, b protocol.Ref) bool {
	return a.Len > 0 && b.Len > 0 && a.Off < b.End() && b.Off < a.End()
}

// handle runs one request; fatal is non-nil when the op failed fatally.
func (c *conn) handle(req protocol.Request) (resp protocol.Response, fatal error) {
	s := c.s
	ctx := c.ctx
	resp.ID = req.ID
	fail := func(st protocol.Status, format string, args ...any) (protocol.Response, error) {
		resp.Status, resp.Message = st, fmt.Sprintf(format, args...)
		return resp, nil
	}
	if c.arena == nil || req.Arena != c.arenaID {
		return fail(protocol.StatusError, "bad request: arena %d is not attached to this connection", req.Arena)
	}
	op, ok := s.ops[req.Op]
	if !ok {
		return fail(protocol.StatusError, "unknown op %q; this executor serves: %s", req.Op, strings.Join(s.names, ", "))
	}
	if _, err := c.arena.Slice(req.Out.Off, req.Out.Len); err != nil {
		return fail(protocol.StatusError, "bad request: output region: %v", err)
	}
	ins := make([][]byte, len(req.Inputs))
	var inBytes int64
	for i, r := range req.Inputs {
		b, err := c.arena.Slice(r.Off, r.Len)
		if err != nil {
			return fail(protocol.StatusError, "bad request: input %d: %v", i, err)
		}
		if overlap(r, req.Out) {
			return fail(protocol.StatusError, "bad request: input %d overlaps the output region", i)
		}
		ins[i] = b
		inBytes += int64(len(b))
	}
	budget := s.cfg.MemoryBudget
	if budget > 0 && inBytes > budget {
		return fail(protocol.StatusOutOfMemory, "inputs of %d bytes exceed the executor's memory budget of %d bytes: split the batch", inBytes, budget)
	}

	for {
		d, err := s.place()
		if err != nil { // every device has been taken out
			resp.Status, resp.Message = protocol.StatusFatal, err.Error()
			return trim(resp), err
		}
		r, fatal, moved := c.runOn(ctx, d, op, req, ins, inBytes)
		s.unplace(d)
		if !moved {
			return trim(r), fatal
		}
	}
}

func trim(resp protocol.Response) protocol.Response {
	if len(resp.Message) > protocol.MaxText {
		resp.Message = resp.Message[:protocol.MaxText]
	}
	return resp
}

// runOn runs a request on device d. moved says that d was taken out (the
// batch failed fatally there, or d failed while it waited) while another
// device serves: the caller places the batch again, on another device.
func (c *conn) runOn(ctx context.Context, d *device, op Op, req protocol.Request, ins [][]byte, inBytes int64) (resp protocol.Response, fatal error, moved bool) {
	s := c.s
	resp.ID = req.ID
	budget := s.cfg.MemoryBudget
	fail := func(st protocol.Status, format string, args ...any) (protocol.Response, error, bool) {
		resp.Status, resp.Message = st, fmt.Sprintf(format, args...)
		return resp, nil, false
	}
	if err := d.acquireLane(ctx); errors.Is(err, errMoved) {
		return resp, nil, true
	} else if err != nil {
		return fail(protocol.StatusError, "cancelled: %v", err)
	}
	defer func() { <-d.slots }()
	var held int64
	if d.mem != nil {
		if err := d.mem.Acquire(ctx, inBytes); err != nil {
			return fail(protocol.StatusError, "cancelled: %v", err)
		}
		held = inBytes
		defer func() { d.mem.Release(held) }()
	}

	alloc := shm.NewAllocator(int64(req.Out.Off), int64(req.Out.Len))
	var (
		outs     []protocol.Ref
		outBytes int64
		oom      bool
		noSpace  int64
	)
	data := c.arena.Bytes()
	out := func(sizes ...int) ([][]byte, error) {
		var total int64
		sz := make([]int64, len(sizes))
		for i, n := range sizes {
			if n < 0 {
				return nil, fmt.Errorf("executor: output size %d is negative", n)
			}
			sz[i] = int64(n)
			total += shm.AlignUp(int64(n))
		}
		if len(outs)+len(sizes) > protocol.MaxBuffers {
			return nil, fmt.Errorf("executor: %d outputs exceed the protocol's limit of %d", len(outs)+len(sizes), protocol.MaxBuffers)
		}
		if d.mem != nil {
			if held+total > budget {
				oom = true
				return nil, fmt.Errorf("%w: inputs and outputs of %d bytes exceed the executor's memory budget of %d bytes: split the batch", protocol.ErrOutOfMemory, held+total, budget)
			}
			if d.mem.TryAcquire(total) {
				held += total
			} else {
				// Wait holding nothing, so two requests each holding part
				// of the budget cannot wait for each other.
				h := held
				d.mem.Release(held)
				held = 0
				if err := d.mem.Acquire(ctx, h+total); err != nil {
					return nil, err
				}
				held = h + total
			}
		}
		if need := alloc.Need(sz...); need > alloc.Size {
			noSpace = need
			return nil, fmt.Errorf("%w: %d bytes asked, %d given", ErrNoSpace, need, alloc.Size)
		}
		bufs := make([][]byte, len(sizes))
		for i, n := range sz {
			r, _ := alloc.Alloc(n)
			bufs[i] = data[r.Off:r.End():r.End()]
			if s.cfg.Poison {
				poison(bufs[i])
			}
			outs = append(outs, protocol.Ref{Off: uint64(r.Off), Len: uint64(r.Len)})
			outBytes += n
		}
		return bufs, nil
	}
	s.started(d)
	start := time.Now()
	err := runOp(withDevice(ctx, d), op, req.Params, ins, out)
	took := time.Since(start)
	s.stopped(d)
	switch {
	case err == nil:
		resp.Status, resp.Outputs = protocol.StatusOK, outs
		resp.Device, resp.BusyNS = uint32(d.ordinal), uint64(took)
		d.batches.Add(1)
		d.bytes.Add(uint64(inBytes + outBytes))
		d.batchNS.Add(uint64(took))
	case errors.Is(err, protocol.ErrFatal):
		d.failedBatches.Add(1)
		if s.takeOut(d, err) {
			if ctx.Err() != nil { // nobody waits for it: the others serve on
				return fail(protocol.StatusError, "cancelled: %v (and device %d failed: %v)", ctx.Err(), d.ordinal, err)
			}
			s.cfg.Logger.Warn("executor: op failed fatally on a device; running it again on another", "op", req.Op, "device", d.ordinal, "client_pid", c.pid)
			return resp, nil, true
		}
		resp.Status, resp.Message = protocol.StatusFatal, err.Error()
		return resp, err, false
	case noSpace > 0:
		resp.Status, resp.Need, resp.Message = protocol.StatusNoSpace, uint64(noSpace), err.Error()
	case oom || errors.Is(err, protocol.ErrOutOfMemory):
		resp.Status, resp.Message = protocol.StatusOutOfMemory, err.Error()
	case errors.Is(err, protocol.ErrNeedSide):
		resp.Status, resp.Message = protocol.StatusNeedSide, err.Error()
	default:
		resp.Status, resp.Message = protocol.StatusError, err.Error()
	}
	return resp, nil, false
}
