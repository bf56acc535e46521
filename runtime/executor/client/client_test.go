package client_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newClient returns a client of the reference executor binary, closed at
// the end of the test.
func newClient(t *testing.T, args ...string) *client.Client {
	t.Helper()
	c := client.New(client.Config{Path: executorBin, Args: args, StartTimeout: 20 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func TestEchoAndSumThroughTheBinary(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	info, err := c.Info(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, os.Getpid(), info.PID, "out of process")
	assert.Contains(t, info.Device, "cpu-reference")
	assert.Equal(t, protocol.Version, info.Version)
	for _, op := range []string{"crash", "echo", "fatal", "sleep", "sum_f32"} {
		assert.Contains(t, info.Ops, op)
	}

	in := [][]byte{[]byte("hello"), {}, pattern(3<<20+5, 1)} // the big one grows the arena
	out, err := c.Call(ctx, testops.Echo, nil, in)
	require.NoError(t, err)
	require.Len(t, out, 3)
	for i := range in {
		assert.True(t, bytes.Equal(in[i], out[i]), "output %d", i)
	}

	out, err = c.Call(ctx, testops.SumF32, nil, [][]byte{testops.F32Bytes(0.25, 0.5, 100, -50)})
	require.NoError(t, err)
	assert.Equal(t, testops.F32Bytes(50.75), out[0])

	// Zero-copy variants: outputs are views until Release; inputs written in place.
	res, err := c.CallFill(ctx, testops.Echo, nil, []int{4}, func(bufs [][]byte) error {
		copy(bufs[0], "fill")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "fill", string(res.Outputs[0]))
	res.Release()
	res.Release() // a second Release does nothing
	assert.Equal(t, 1, c.Stats().Starts)
}

func TestConcurrentCallersShareOneExecutor(t *testing.T) {
	c := newClient(t, "--max_concurrent=2")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				in := pattern(1000*g+i, byte(g))
				out, err := c.Call(context.Background(), testops.Echo, nil, [][]byte{in})
				if !assert.NoError(t, err) {
					return
				}
				assert.True(t, bytes.Equal(in, out[0]), "goroutine %d call %d got another's output", g, i)
			}
		}(g)
	}
	wg.Wait()
	st := c.Stats()
	assert.Equal(t, 1, st.Starts)
	assert.Equal(t, 0, st.Retries)
}

func TestMemoryBudgetThroughTheBinary(t *testing.T) {
	c := newClient(t, "--memory_budget=1MiB")
	ctx := context.Background()
	info, err := c.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<20), info.Limits.MemoryBudget)

	_, err = c.Call(ctx, testops.Echo, nil, [][]byte{make([]byte, 2<<20)})
	require.ErrorIs(t, err, protocol.ErrOutOfMemory)
	assert.False(t, client.IsRetryable(err), "out of memory is the batch's problem: split it")
	out, err := c.Call(ctx, testops.Echo, nil, [][]byte{make([]byte, 256<<10)})
	require.NoError(t, err)
	assert.Len(t, out[0], 256<<10)
	assert.Equal(t, 1, c.Stats().Starts, "out of memory does not restart the executor")
}

func TestKilledExecutorIsRestartedAndTheCallSucceedsOnce(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	info, err := c.Info(ctx)
	require.NoError(t, err)

	in := pattern(1<<20, 3)
	type result struct {
		out [][]byte
		err error
	}
	results := make(chan result, 2)
	go func() {
		out, err := c.Call(ctx, testops.Sleep, []byte("600"), [][]byte{in})
		results <- result{out, err}
	}()
	time.Sleep(200 * time.Millisecond) // mid-batch
	require.NoError(t, syscall.Kill(info.PID, syscall.SIGKILL))

	var r result
	select {
	case r = <-results:
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not return after the executor was killed")
	}
	require.NoError(t, r.err)
	require.Len(t, r.out, 1)
	assert.True(t, bytes.Equal(in, r.out[0]))
	select {
	case <-results:
		t.Fatal("a second result")
	case <-time.After(50 * time.Millisecond):
	}
	st := c.Stats()
	assert.Equal(t, 1, st.Retries, "retried once")
	assert.Equal(t, 1, st.Restarts)

	info2, err := c.Info(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, info.PID, info2.PID, "a new executor")
	assert.Error(t, syscall.Kill(info.PID, 0), "the old one is gone")
}

// An executor killed between calls (its process not yet reaped, its socket
// refusing connections) is replaced by the next call, which succeeds: a
// death that a restart fixes never fails a batch. Killed 20 times in a row.
func TestExecutorKilledBetweenCallsIsReplaced(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	for i := range 20 {
		info, err := c.Info(ctx)
		require.NoError(t, err)
		require.NoError(t, syscall.Kill(info.PID, syscall.SIGKILL))
		// Callers at once: one takes the dead executor's idle connection,
		// the others connect to its socket.
		var wg sync.WaitGroup
		for j := range 4 {
			wg.Go(func() {
				out, err := c.Call(ctx, testops.Echo, nil, [][]byte{[]byte("again")})
				if assert.NoError(t, err, "kill %d, caller %d", i, j) {
					assert.Equal(t, "again", string(out[0]))
				}
			})
		}
		wg.Wait()
	}
	assert.Equal(t, 20, c.Stats().Restarts)
}

func TestCrashingOpFailsAfterOneRetry(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	_, err := c.Call(ctx, testops.Crash, nil, [][]byte{[]byte("x")})
	require.Error(t, err)
	assert.ErrorIs(t, err, client.ErrExecutorDied)
	assert.True(t, client.IsRetryable(err))
	assert.Contains(t, err.Error(), fmt.Sprintf("exit status %d", testops.CrashExitCode))
	assert.Contains(t, err.Error(), "crash op: exiting mid-request", "the executor's stderr is in the error")
	assert.Contains(t, err.Error(), "retried once")
	st := c.Stats()
	assert.Equal(t, 1, st.Retries)
	assert.Equal(t, 2, st.Starts)

	// The next call gets a fresh executor.
	out, err := c.Call(ctx, testops.Echo, nil, [][]byte{[]byte("after")})
	require.NoError(t, err)
	assert.Equal(t, "after", string(out[0]))
	assert.Equal(t, 3, c.Stats().Starts)
}

func TestFatalOpRestartsTheExecutor(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	_, err := c.Call(ctx, testops.Fatal, nil, nil)
	require.ErrorIs(t, err, protocol.ErrFatal)
	assert.Contains(t, err.Error(), "sticky CUDA error")
	assert.Contains(t, err.Error(), "exit status 3", "the executor exits non-zero after a fatal error")
	out, err := c.Call(ctx, testops.Echo, nil, [][]byte{[]byte("ok")})
	require.NoError(t, err)
	assert.Equal(t, "ok", string(out[0]))
	assert.Equal(t, 3, c.Stats().Starts)
}

func TestTimeoutLeavesTheExecutorRunning(t *testing.T) {
	c := newClient(t)
	_, err := c.Info(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = c.Call(ctx, testops.Sleep, []byte("10000"), nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, client.IsRetryable(err))
	assert.Less(t, time.Since(t0), 3*time.Second)

	_, err = c.Call(context.Background(), testops.Echo, nil, nil)
	require.NoError(t, err)
	st := c.Stats()
	assert.Equal(t, 1, st.Starts)
	assert.Equal(t, 0, st.Retries)
}

func TestSocketAndSharedMemoryArePrivate(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	_, err := c.Call(ctx, testops.Echo, nil, [][]byte{make([]byte, 1<<20)})
	require.NoError(t, err)
	info, err := c.Info(ctx)
	require.NoError(t, err)

	fi, err := os.Stat(info.Socket)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket|0o600, fi.Mode()&(os.ModeSocket|os.ModePerm), "socket 0600")
	dir := filepath.Dir(info.Socket)
	fi, err = os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "socket directory 0700")

	// The arenas (0600, checked in package shm) are unlinked at once:
	// nothing of this process is left in /dev/shm, even mid-use.
	left, _ := filepath.Glob(fmt.Sprintf("/dev/shm/beamgpu-arena-%d-*", os.Getpid()))
	assert.Empty(t, left)
	for _, fd := range openFDs(t, info.PID) {
		if strings.Contains(fd, "beamgpu-arena") {
			assert.Contains(t, fd, "(deleted)", "the executor maps an unlinked file")
		}
	}

	require.NoError(t, c.Close())
	assert.Eventually(t, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) }, 10*time.Second, 20*time.Millisecond,
		"the socket directory is removed once the executor is gone")
}

// openFDs lists what the process's descriptors point to.
func openFDs(t *testing.T, pid int) []string {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Logf("cannot list descriptors: %v", err)
		return nil
	}
	var out []string
	for _, e := range ents {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil {
			out = append(out, l)
		}
	}
	return out
}

func TestFindAndProbe(t *testing.T) {
	if _, err := os.Stat(client.DefaultPath); err == nil {
		t.Skipf("%s exists on this machine", client.DefaultPath)
	}
	t.Setenv(client.EnvPath, "")
	_, err := client.Find("")
	assert.EqualError(t, err, "GPU executor: not available: --gpu_executor not set, $BEAMGPU_EXECUTOR not set, /opt/beamgpu/bin/beamgpu-executor not found")
	assert.ErrorIs(t, err, client.ErrUnavailable)

	var ex backend.Executor = client.Probe("")
	ok, why := ex.Available()
	assert.False(t, ok)
	assert.Equal(t, "GPU executor: not available: --gpu_executor not set, $BEAMGPU_EXECUTOR not set, /opt/beamgpu/bin/beamgpu-executor not found", why)

	_, err = client.Find("/nope/beamgpu-executor")
	assert.ErrorContains(t, err, "GPU executor: not available: --gpu_executor=/nope/beamgpu-executor: stat /nope/beamgpu-executor: no such file or directory")
	notExec := filepath.Join(t.TempDir(), "x")
	require.NoError(t, os.WriteFile(notExec, nil, 0o644))
	_, err = client.Find(notExec)
	assert.ErrorContains(t, err, "not executable")

	t.Setenv(client.EnvPath, executorBin)
	path, err := client.Find("")
	require.NoError(t, err)
	assert.Equal(t, executorBin, path)
	t.Setenv(client.EnvPath, "/nope")
	_, err = client.Find("")
	assert.ErrorContains(t, err, "$BEAMGPU_EXECUTOR=/nope")
	path, err = client.Find(executorBin)
	require.NoError(t, err, "the flag wins over the environment")
	assert.Equal(t, executorBin, path)

	defer client.CloseShared()
	ok, why = client.Probe(executorBin).Available()
	assert.True(t, ok, why)
	assert.Contains(t, why, "cpu-reference")
	echo := backend.Step{Name: "echo", GPUOp: testops.Echo}
	other := backend.Step{Name: "other", GPUOp: "family.other"}
	sel := backend.MustNew(backend.Config{Executor: client.Probe(executorBin), Steps: []backend.Step{echo, other}})
	d, err := sel.Resolve(echo)
	require.NoError(t, err)
	assert.Equal(t, backend.GPU, d.Impl)
	d, err = sel.Resolve(other)
	require.NoError(t, err)
	assert.Equal(t, backend.CPU, d.Impl, "an op the executor does not serve runs on the CPU")
	assert.Contains(t, d.Reason, "does not serve op family.other")

	s1, err := client.Shared(executorBin)
	require.NoError(t, err)
	assert.Same(t, s1, client.SharedAt(executorBin), "one client per executor path")
	assert.NotSame(t, s1, client.SharedAt(notExec))
}

func TestProbeOfABrokenExecutor(t *testing.T) {
	// An executor that dies at start, as a CUDA build does on a machine
	// without a GPU (cu exits in init).
	bad := filepath.Join(t.TempDir(), "beamgpu-executor")
	require.NoError(t, os.WriteFile(bad, []byte("#!/bin/sh\necho 'cuInit: no CUDA-capable device is detected' >&2\nexit 1\n"), 0o755))
	c := client.New(client.Config{Path: bad, Stderr: &bytes.Buffer{}})
	defer c.Close()
	ok, why := c.Available()
	assert.False(t, ok)
	assert.Contains(t, why, "exited before serving: exit status 1; stderr: cuInit: no CUDA-capable device is detected")
}

func TestVersionMismatchWithAFakeServer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "fake.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			c := protocol.NewConn(nc.(*net.UnixConn))
			if _, _, err := c.ReadFrame(); err == nil {
				// An executor of the next version: its Welcome starts
				// with its version.
				protocol.WriteFrame(c, protocol.TWelcome, append(binary.LittleEndian.AppendUint16(nil, protocol.Version+1), 'v', 'x'))
			}
			c.Close()
		}
	}()
	c := client.New(client.Config{Socket: sock})
	defer c.Close()
	_, err = c.Call(context.Background(), testops.Echo, nil, nil)
	require.ErrorIs(t, err, protocol.ErrVersionMismatch)
	assert.Contains(t, err.Error(), fmt.Sprintf("client speaks v%d, executor speaks v%d", protocol.Version, protocol.Version+1))
	ok, why := c.Available()
	assert.False(t, ok)
	assert.Contains(t, why, "version mismatch")
}

func TestExecutorCommandLine(t *testing.T) {
	out, err := exec.Command(executorBin, "selftest").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "device: cpu-reference")
	assert.Contains(t, string(out), "ok    echo")
	assert.Contains(t, string(out), "skip  crash")
	assert.Contains(t, string(out), "PASS")

	out, err = exec.Command(executorBin, "serve", "--help").CombinedOutput()
	require.NoError(t, err)
	assert.Contains(t, string(out), "-max_concurrent")
	assert.Contains(t, string(out), "-memory_budget")

	err = exec.Command(executorBin, "serve").Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode(), "--socket is required")
	err = exec.Command(executorBin, "serve", "--socket=/tmp/x.sock", "--memory_budget=lots").Run()
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode())
}
