package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type running struct {
	srv    *server.Server
	socket string
	served chan error // Serve's result
	cl     *client.Client
}

// start serves cfg in this process and returns a client connected to it.
func start(t *testing.T, cfg server.Config) *running {
	t.Helper()
	if cfg.Ops == nil {
		cfg.Ops = testops.All()
	}
	if cfg.Device == "" && cfg.Devices == nil {
		cfg.Device = "test-device"
	}
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	srv, err := server.New(cfg)
	require.NoError(t, err)
	sock := filepath.Join(t.TempDir(), "s", "executor.sock")
	ln, err := server.Listen(sock)
	require.NoError(t, err)
	r := &running{srv: srv, socket: sock, served: make(chan error, 1), cl: client.New(client.Config{Socket: sock, StartTimeout: 5 * time.Second})}
	go func() { r.served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		r.cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return r
}

func TestListenPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	sock := filepath.Join(dir, "executor.sock")
	ln, err := server.Listen(sock)
	require.NoError(t, err)
	defer ln.Close()
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket|0o600, fi.Mode()&(os.ModeSocket|os.ModePerm))
	fi, err = os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	_, err = server.Listen(sock)
	assert.ErrorContains(t, err, "another executor is serving on it")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o600))
	_, err = server.Listen(filepath.Join(dir, "file"))
	assert.ErrorContains(t, err, "not a socket")
}

func TestHandshakeReportsDeviceOpsAndLimits(t *testing.T) {
	r := start(t, server.Config{MaxConcurrent: 3, MemoryBudget: 1 << 30})
	info, err := r.cl.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "test-device", info.Device)
	assert.Equal(t, []string{"crash", "discard", "echo", "fatal", "sleep", "sum_f32"}, info.Ops)
	assert.Equal(t, uint32(3), info.Limits.MaxConcurrent)
	assert.Equal(t, uint64(1<<30), info.Limits.MemoryBudget)
	assert.Equal(t, os.Getpid(), info.PID)
}

func TestServerRejectsAnotherVersion(t *testing.T) {
	r := start(t, server.Config{})
	c, err := protocol.Dial(context.Background(), r.socket)
	require.NoError(t, err)
	defer c.Close()
	// A client of the next protocol version: magic, its version, then
	// whatever it sends.
	next := protocol.Version + 1
	hello := binary.LittleEndian.AppendUint16([]byte(protocol.Magic), next)
	require.NoError(t, protocol.WriteFrame(c, protocol.THello, append(hello, 1, 2, 3, 4, 5, 6)))
	m, err := c.Recv()
	require.NoError(t, err)
	rej, ok := m.(protocol.Reject)
	require.True(t, ok, "got %T", m)
	assert.Equal(t, protocol.Version, rej.Version)
	assert.Equal(t, fmt.Sprintf("executor speaks protocol v%d, client speaks v%d", protocol.Version, next), rej.Message)
	_, err = c.Recv()
	assert.Error(t, err, "the server closes after a Reject")

	// And a stray, non-beamgpu client.
	c2, err := protocol.Dial(context.Background(), r.socket)
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	require.NoError(t, err)
	_, err = c2.Recv()
	assert.Error(t, err)
}

func TestEchoAndSumInProcess(t *testing.T) {
	r := start(t, server.Config{})
	ctx := context.Background()
	out, err := r.cl.Call(ctx, testops.Echo, nil, [][]byte{[]byte("abc"), {}, make([]byte, 100<<10)})
	require.NoError(t, err)
	require.Len(t, out, 3)
	assert.Equal(t, "abc", string(out[0]))
	assert.Empty(t, out[1])
	assert.Len(t, out[2], 100<<10)

	out, err = r.cl.Call(ctx, testops.SumF32, nil, [][]byte{testops.F32Bytes(1.5, 2.5, -1)})
	require.NoError(t, err)
	assert.Equal(t, testops.F32Bytes(3), out[0])
}

func TestMemoryBudget(t *testing.T) {
	r := start(t, server.Config{MemoryBudget: 1 << 20})
	ctx := context.Background()

	_, err := r.cl.Call(ctx, testops.Echo, nil, [][]byte{make([]byte, 2<<20)})
	require.ErrorIs(t, err, protocol.ErrOutOfMemory, "inputs alone exceed the budget")
	assert.False(t, client.IsRetryable(err))
	assert.Contains(t, err.Error(), "exceed the executor's memory budget of 1048576 bytes")

	_, err = r.cl.Call(ctx, testops.Echo, nil, [][]byte{make([]byte, 600<<10)})
	require.ErrorIs(t, err, protocol.ErrOutOfMemory, "inputs and outputs exceed the budget")

	// Split in two, each half fits.
	for i := 0; i < 2; i++ {
		out, err := r.cl.Call(ctx, testops.Echo, nil, [][]byte{make([]byte, 300<<10)})
		require.NoError(t, err)
		assert.Len(t, out[0], 300<<10)
	}

	// Requests that fit alone but not together wait for each other instead
	// of failing.
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.cl.Call(ctx, testops.Sleep, []byte("20"), [][]byte{make([]byte, 400<<10)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

// gauge is an op that records how many of its runs overlap.
type gauge struct {
	now, peak atomic.Int32
}

func (g *gauge) Name() string { return "gauge" }
func (g *gauge) Run(ctx context.Context, _ []byte, _ [][]byte, _ server.Outputs) error {
	n := g.now.Add(1)
	defer g.now.Add(-1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(20 * time.Millisecond)
	return nil
}

func TestMaxConcurrentBoundsBatches(t *testing.T) {
	g := &gauge{}
	r := start(t, server.Config{MaxConcurrent: 2, Ops: []server.Op{g}})
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				_, err := r.cl.Call(context.Background(), "gauge", nil, nil)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(2), g.peak.Load(), "6 concurrent clients, at most 2 batches at once")
}

func TestOpErrorsKeepTheExecutorUsable(t *testing.T) {
	boom := server.Func("boom", func(context.Context, []byte, [][]byte, server.Outputs) error { panic("kernel bug") })
	fails := server.Func("fails", func(context.Context, []byte, [][]byte, server.Outputs) error { return errors.New("bad tile") })
	r := start(t, server.Config{Ops: append(testops.All(), boom, fails)})
	ctx := context.Background()

	_, err := r.cl.Call(ctx, "nope", nil, nil)
	var oe *client.OpError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, protocol.StatusError, oe.Status)
	assert.Contains(t, oe.Message, `unknown op "nope"; this executor serves: boom, crash, discard, echo`)

	_, err = r.cl.Call(ctx, "boom", nil, nil)
	assert.ErrorContains(t, err, `op "boom" panicked: kernel bug`)
	_, err = r.cl.Call(ctx, "fails", nil, nil)
	assert.EqualError(t, err, `GPU executor: op "fails": op error: bad tile`)
	assert.False(t, client.IsRetryable(err))
	_, err = r.cl.Call(ctx, testops.SumF32, nil, [][]byte{{1, 2, 3}})
	assert.ErrorContains(t, err, "want one input of little-endian float32s")

	out, err := r.cl.Call(ctx, testops.Echo, nil, [][]byte{[]byte("still fine")})
	require.NoError(t, err)
	assert.Equal(t, "still fine", string(out[0]))
	assert.Equal(t, 1, r.cl.Stats().Starts, "one connection served every call")
}

func TestOutputsLargerThanOfferedGrowTheArena(t *testing.T) {
	big := server.Func("big", func(_ context.Context, _ []byte, in [][]byte, out server.Outputs) error {
		bufs, err := out(3<<20, 5)
		if err != nil {
			return err
		}
		bufs[0][len(bufs[0])-1] = 9
		copy(bufs[1], "small")
		return nil
	})
	r := start(t, server.Config{Ops: []server.Op{big}})
	res, err := r.cl.CallView(context.Background(), "big", nil, [][]byte{{1}})
	require.NoError(t, err)
	defer res.Release()
	require.Len(t, res.Outputs, 2)
	assert.Len(t, res.Outputs[0], 3<<20)
	assert.Equal(t, byte(9), res.Outputs[0][3<<20-1])
	assert.Equal(t, "small", string(res.Outputs[1]))
}

func TestCancelledCallCancelsTheOp(t *testing.T) {
	cancelled := make(chan struct{})
	wait := server.Func("wait", func(ctx context.Context, _ []byte, _ [][]byte, _ server.Outputs) error {
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	})
	r := start(t, server.Config{Ops: append(testops.All(), wait)})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := r.cl.Call(ctx, "wait", nil, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(t0), 2*time.Second)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the op's context was not cancelled when its client gave up")
	}
	_, err = r.cl.Call(context.Background(), testops.Echo, nil, nil)
	assert.NoError(t, err)
}

func TestFatalStopsTheServer(t *testing.T) {
	r := start(t, server.Config{})
	_, err := r.cl.Call(context.Background(), testops.Fatal, nil, nil)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "the first attempt failed: GPU executor: op \"fatal\": fatal: executor: fatal error"), err.Error())
	select {
	case err := <-r.served:
		assert.ErrorIs(t, err, protocol.ErrFatal)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after a fatal op")
	}
	_, err = net.Dial("unix", r.socket)
	assert.Error(t, err, "no longer serving")
}

func TestGracefulShutdownLetsBatchesFinish(t *testing.T) {
	r := start(t, server.Config{})
	// An idle connection and a busy one.
	_, err := r.cl.Info(context.Background())
	require.NoError(t, err)
	done := make(chan error, 1)
	var out [][]byte
	go func() {
		var err error
		out, err = r.cl.Call(context.Background(), testops.Sleep, []byte("300"), [][]byte{[]byte("late")})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.srv.Shutdown(ctx))
	require.NoError(t, <-done, "the running batch finished and answered")
	assert.Equal(t, "late", string(out[0]))
	require.NoError(t, <-r.served)
	_, err = net.Dial("unix", r.socket)
	assert.Error(t, err)
}

func TestRunLocalAndRegistry(t *testing.T) {
	out, err := server.RunLocal(context.Background(), testops.All()[0], nil, [][]byte{[]byte("x")})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("x")}, out)

	name := fmt.Sprintf("registry-test-op-%d", time.Now().UnixNano()) // -count=N runs it N times
	op := server.Func(name, func(context.Context, []byte, [][]byte, server.Outputs) error { return nil })
	server.Register(op)
	got, ok := server.Lookup(name)
	assert.True(t, ok)
	assert.Equal(t, name, got.Name())
	assert.Panics(t, func() { server.Register(op) })
	_, err = server.New(server.Config{Ops: []server.Op{op, op}})
	assert.ErrorContains(t, err, "given twice")
}

// needSideOp fails as an op does that needs side data its request only
// names: with an error wrapping protocol.ErrNeedSide (params "typed"), or
// with a plain error of the same text (anything else).
type needSideOp struct{}

func (needSideOp) Name() string { return "need_side" }

func (needSideOp) Run(_ context.Context, params []byte, _ [][]byte, _ server.Outputs) error {
	if string(params) == "typed" {
		return fmt.Errorf("op need_side: %w: key", protocol.ErrNeedSide)
	}
	return errors.New("op need_side: " + protocol.ErrNeedSide.Error() + ": key")
}

// An op's error wrapping protocol.ErrNeedSide crosses as StatusNeedSide,
// which the client's error matches (errors.Is); a plain error with the same
// text is an op error like any other.
func TestNeedSideCrossesAsAStatus(t *testing.T) {
	r := start(t, server.Config{Ops: append(testops.All(), needSideOp{})})
	ctx := context.Background()
	_, err := r.cl.Call(ctx, "need_side", []byte("typed"), nil)
	require.ErrorIs(t, err, protocol.ErrNeedSide)
	var opErr *client.OpError
	require.ErrorAs(t, err, &opErr)
	assert.Equal(t, protocol.StatusNeedSide, opErr.Status)
	assert.False(t, client.IsRetryable(err), "the client sends it again with the side data, not as is")

	_, err = r.cl.Call(ctx, "need_side", []byte("plain"), nil)
	require.ErrorAs(t, err, &opErr)
	assert.Equal(t, protocol.StatusError, opErr.Status)
	assert.NotErrorIs(t, err, protocol.ErrNeedSide)
	assert.ErrorContains(t, err, protocol.ErrNeedSide.Error(), "the same words")

	out, err := r.cl.Call(ctx, testops.Echo, nil, [][]byte{[]byte("ok")})
	require.NoError(t, err)
	assert.Equal(t, "ok", string(out[0]), "the connection stays usable")
}
