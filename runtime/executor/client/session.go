package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/shm"
)

// session is one connection to the executor with its arena. One call at a
// time uses it.
type session struct {
	c       *Client
	p       *proc
	pc      *protocol.Conn
	welcome protocol.Welcome
	arena   *shm.Arena
	arenaID uint32
	nextID  uint64
	broken  bool // unusable: closed on put

	idleSince time.Time // when it was put back in the pool
}

// dial opens a session to p.
func (c *Client) dial(ctx context.Context, p *proc) (*session, error) {
	pc, err := protocol.Dial(ctx, p.socket)
	if err != nil {
		return nil, fmt.Errorf("%w: connect to %s: %v", ErrUnavailable, p.socket, err)
	}
	s, err := c.handshake(ctx, p, pc)
	if err != nil {
		// The executor went away between accepting and welcoming (it
		// crashed on another connection's batch): like a death mid-call,
		// a new executor may serve the batch.
		return nil, fmt.Errorf("%w: %w", ErrExecutorDied, err)
	}
	return s, nil
}

// handshake makes a session of a new connection to p.
func (c *Client) handshake(ctx context.Context, p *proc, pc *protocol.Conn) (*session, error) {
	if d, ok := ctx.Deadline(); ok {
		pc.SetDeadline(d)
	} else {
		pc.SetDeadline(time.Now().Add(c.cfg.StartTimeout))
	}
	// A stopped executor accepts connections (the kernel does) but never
	// welcomes them: watched, it costs StallAfter, not StartTimeout.
	stop := make(chan struct{})
	var stalled atomic.Value
	pid := int(p.welcome.PID)
	if p.cmd != nil && p.cmd.Process != nil {
		pid = p.cmd.Process.Pid // known before the first welcome
	}
	go watchPID(pid, c.cfg.StallAfter, stop, func(why string) {
		stalled.Store(why)
		pc.SetDeadline(longAgo)
	})
	w, err := protocol.ClientHandshake(pc)
	close(stop)
	pc.SetDeadline(time.Time{})
	if why, ok := stalled.Load().(string); ok && err != nil {
		err = fmt.Errorf("%w: %s", err, why)
	}
	if err != nil {
		pc.Close()
		return nil, err
	}
	return &session{c: c, p: p, pc: pc, welcome: w}, nil
}

func (s *session) close() {
	s.broken = true
	s.pc.Close()
	if s.arena != nil {
		s.arena.Close()
		s.arena = nil
	}
}

// longAgo is a deadline in the past: it wakes blocked socket I/O.
var longAgo = time.Unix(1, 0)

// roundTrip sends m (with fds) and reads one answer, honouring ctx. The
// answer must come within limit, and while it is awaited the executor's
// process is watched (session.watch): a stall is a *StallError naming op.
func (s *session) roundTrip(ctx context.Context, m protocol.Message, op string, limit time.Duration, fds ...int) (protocol.Message, error) {
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { s.pc.SetDeadline(longAgo) })
		defer func() {
			if !stop() {
				s.broken = true // the deadline may be set after we return
			}
		}()
	}
	start := time.Now()
	s.pc.SetDeadline(start.Add(limit))
	stopWatch, stalled := make(chan struct{}), make(chan string, 1)
	go s.watch(stopWatch, stalled)
	err := s.pc.Send(m, fds...)
	var ans protocol.Message
	if err == nil {
		ans, err = s.pc.Recv()
	}
	close(stopWatch)
	if err != nil {
		s.broken = true
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		select {
		case why := <-stalled:
			return nil, &StallError{Op: op, After: time.Since(start), PID: int(s.welcome.PID), Why: why}
		default:
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &StallError{Op: op, After: time.Since(start), PID: int(s.welcome.PID),
				Why: fmt.Sprintf("no answer within its deadline of %v", limit.Round(time.Millisecond))}
		}
		return nil, fmt.Errorf("%w: connection lost: %v", ErrExecutorDied, err)
	}
	s.pc.SetDeadline(time.Time{})
	return ans, nil
}

// minOut is the smallest output region a request offers.
const minOut = 64 << 10

// ensure makes the arena at least size bytes, telling the executor.
func (s *session) ensure(ctx context.Context, size int64) error {
	if s.arena != nil && s.arena.Size() >= size {
		return nil
	}
	limit := s.c.cfg.MaxArena
	if size > limit {
		return fmt.Errorf("%w: it needs %d bytes, over the %d-byte arena limit: split it", ErrNoArena, size, limit)
	}
	grow := size
	if s.arena != nil {
		grow = min(max(size, 2*s.arena.Size()), limit)
	}
	var err error
	if s.arena == nil {
		s.arena, err = shm.Create(grow)
	} else {
		err = s.arena.Grow(grow)
	}
	if err != nil {
		s.broken = true
		return fmt.Errorf("%w: %w", ErrNoArena, err)
	}
	s.arenaID++
	ans, err := s.roundTrip(ctx, protocol.Arena{ID: s.arenaID, Size: uint64(s.arena.Size())}, "arena", s.c.cfg.CallFloor, s.arena.FD())
	if err != nil {
		return err
	}
	ack, ok := ans.(protocol.ArenaAck)
	if !ok || ack.ID != s.arenaID {
		s.broken = true
		return fmt.Errorf("%w: answer to Arena: %v", protocol.ErrFrame, ans)
	}
	if ack.Status != protocol.StatusOK {
		s.broken = true
		return fmt.Errorf("GPU executor: refused the shared-memory arena: %s", ack.Message)
	}
	return nil
}

// call runs one attempt of an op on this session and returns views of the
// outputs.
func (s *session) call(ctx context.Context, op string, params []byte, sizes []int, fill func([][]byte) error, o callOptions) ([][]byte, error) {
	// Layout: the inputs from offset 0, then the output region up to the
	// end of the arena.
	alloc := shm.NewAllocator(0, s.c.cfg.MaxArena)
	regions := make([]shm.Region, len(sizes))
	var inBytes int64
	for i, n := range sizes {
		r, ok := alloc.Alloc(int64(n))
		if !ok {
			return nil, fmt.Errorf("GPU executor: op %q: %w: its inputs exceed the %d-byte arena limit: split the batch", op, ErrNoArena, s.c.cfg.MaxArena)
		}
		regions[i] = r
		inBytes += int64(n)
	}
	inEnd := shm.AlignUp(alloc.Used())
	out := inBytes // a guess: outputs as large as the inputs
	if o.outHint >= 0 {
		out = o.outHint
	}
	if err := s.ensure(ctx, inEnd+shm.AlignUp(max(out, minOut))); err != nil {
		return nil, err
	}
	bufs := make([][]byte, len(sizes))
	refs := make([]protocol.Ref, len(sizes))
	for i, r := range regions {
		bufs[i], _ = s.arena.Slice(uint64(r.Off), uint64(r.Len))
		refs[i] = protocol.Ref{Off: uint64(r.Off), Len: uint64(r.Len)}
	}
	if err := fill(bufs); err != nil {
		return nil, fmt.Errorf("GPU executor: op %q: filling the inputs: %w", op, err)
	}
	for try := 0; ; try++ {
		s.nextID++
		req := protocol.Request{
			ID: s.nextID, Arena: s.arenaID, Op: op, Params: params, Inputs: refs,
			Out: protocol.Ref{Off: uint64(inEnd), Len: uint64(s.arena.Size() - inEnd)},
		}
		sent := time.Now()
		ans, err := s.roundTrip(ctx, req, op, s.c.deadline(op, inBytes+out))
		if err != nil {
			var stall *StallError
			if errors.As(err, &stall) {
				return nil, err
			}
			return nil, fmt.Errorf("GPU executor: op %q: %w", op, err)
		}
		resp, ok := ans.(protocol.Response)
		if !ok || resp.ID != req.ID {
			s.broken = true
			return nil, fmt.Errorf("GPU executor: op %q: %w: answer %v to request %d", op, protocol.ErrFrame, ans, req.ID)
		}
		switch resp.Status {
		case protocol.StatusOK:
			outs := make([][]byte, len(resp.Outputs))
			moved := inBytes
			for _, r := range resp.Outputs {
				moved += int64(r.Len)
			}
			s.c.rates.observe(op, moved, time.Since(sent))
			if f, ok := ctx.Value(placementKey{}).(func(Placement)); ok {
				f(Placement{Device: int(resp.Device), Busy: time.Duration(resp.BusyNS), Bytes: moved})
			}
			for i, r := range resp.Outputs {
				if r.Off < req.Out.Off || r.End() > req.Out.End() {
					s.broken = true
					return nil, fmt.Errorf("GPU executor: op %q: %w: output %d at %d+%d is outside the output region", op, protocol.ErrFrame, i, r.Off, r.Len)
				}
				outs[i], _ = s.arena.Slice(r.Off, r.Len)
			}
			return outs, nil
		case protocol.StatusNoSpace:
			if try >= 2 || resp.Need <= req.Out.Len {
				return nil, fmt.Errorf("GPU executor: op %q: output region still too small after growing (%d bytes asked)", op, resp.Need)
			}
			if err := s.ensure(ctx, inEnd+shm.AlignUp(int64(resp.Need))); err != nil {
				return nil, fmt.Errorf("GPU executor: op %q: %w", op, err)
			}
			continue
		case protocol.StatusFatal:
			s.broken = true
		}
		return nil, &OpError{Op: op, Status: resp.Status, Message: resp.Message}
	}
}
