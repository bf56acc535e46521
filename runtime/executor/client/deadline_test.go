package client_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callWithin runs a call in a goroutine and fails the test if it does not
// return within limit: the defect is a call that never returns.
func callWithin(t *testing.T, limit time.Duration, call func() ([][]byte, error)) ([][]byte, error) {
	t.Helper()
	type result struct {
		out [][]byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := call()
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(limit):
		t.Fatalf("the call did not return within %v", limit)
		return nil, nil
	}
}

// An executor stopped (SIGSTOP) in the middle of a batch is seen stopped by
// the liveness check, killed and replaced, and the batch is sent again
// once: the call returns its outputs, once, within seconds.
func TestStoppedExecutorIsKilledAndReplaced(t *testing.T) {
	var logged syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	c := client.New(client.Config{Path: executorBin, StartTimeout: 20 * time.Second, StallAfter: 300 * time.Millisecond, CallFloor: 20 * time.Second})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	info, err := c.Info(ctx)
	require.NoError(t, err)
	in := pattern(1<<20, 5)
	t0 := time.Now()
	out, err := callWithin(t, 30*time.Second, func() ([][]byte, error) {
		go func() {
			time.Sleep(100 * time.Millisecond) // mid-batch
			syscall.Kill(info.PID, syscall.SIGSTOP)
		}()
		return c.Call(ctx, testops.Sleep, []byte("500"), [][]byte{in})
	})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(in, out[0]))
	assert.Less(t, time.Since(t0), 15*time.Second, "well before the call's floor of 20 s")
	st := c.Stats()
	assert.Equal(t, 1, st.Retries)
	assert.Equal(t, 1, st.Restarts)
	require.Eventually(t, func() bool { return syscall.Kill(info.PID, 0) != nil }, 10*time.Second, 20*time.Millisecond, "the stopped executor was killed")
	assert.Regexp(t, `level=WARN msg="GPU executor retired; the next call starts a new one" pid=`+strconv.Itoa(info.PID)+` reason=".*GPU executor stalled for \d+ s .*the process was stopped`, logged.String(), "the restart is logged with its reason")
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An executor that takes far longer than the op's measured rate allows (a
// hang that is not a stop) misses the call's deadline, is killed and
// replaced; a batch that stalls the new one too fails with "GPU executor
// stalled for N s", a death (retryable, so the step may use the CPU).
func TestHungCallMissesItsDeadline(t *testing.T) {
	c := client.New(client.Config{Path: executorBin, StartTimeout: 20 * time.Second, CallFloor: 300 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	_, err := c.Call(ctx, testops.Sleep, []byte("1"), [][]byte{[]byte("x")}) // measured: fast
	require.NoError(t, err)
	info, err := c.Info(ctx)
	require.NoError(t, err)
	t0 := time.Now()
	_, err = callWithin(t, 30*time.Second, func() ([][]byte, error) {
		return c.Call(ctx, testops.Sleep, []byte("60000"), [][]byte{[]byte("x")})
	})
	require.Error(t, err)
	var stall *client.StallError
	require.True(t, errors.As(err, &stall), "%v", err)
	assert.ErrorIs(t, err, client.ErrExecutorDied)
	assert.True(t, client.IsRetryable(err))
	assert.Regexp(t, `^GPU executor stalled for \d+ s \(op "sleep", executor pid \d+: no answer within its deadline of 300ms\) \(retried once`, err.Error())
	assert.Less(t, time.Since(t0), 20*time.Second)
	assert.Equal(t, 1, c.Stats().Restarts, "the first stalled executor replaced for the retry")
	require.Eventually(t, func() bool { return syscall.Kill(info.PID, 0) != nil }, 10*time.Second, 20*time.Millisecond, "the hung executor was killed")

	out, err := c.Call(ctx, testops.Echo, nil, [][]byte{[]byte("after")})
	require.NoError(t, err)
	assert.Equal(t, "after", string(out[0]))
	assert.Equal(t, 2, c.Stats().Restarts, "the second replaced by the next call")
}

// serveAt runs the executor on socket until SIGTERM and waits for its exit.
func serveAt(t *testing.T, socket string) {
	t.Helper()
	cmd := exec.Command(executorBin, "serve", "--socket="+socket)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	require.Eventually(t, func() bool { _, err := os.Stat(socket); return err == nil }, 20*time.Second, 10*time.Millisecond, "the socket")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the executor did not exit on SIGTERM")
	}
}

// The executor removes its socket's directory on exit only if the
// directory is its own (made by it, or by a client for it): the user's
// directory of serve --socket=DIR/x.sock stays, even empty.
func TestExecutorRemovesOnlyItsOwnSocketDirectory(t *testing.T) {
	mine := filepath.Join(t.TempDir(), "mine")
	require.NoError(t, os.Mkdir(mine, 0o700))
	serveAt(t, filepath.Join(mine, "x.sock"))
	assert.DirExists(t, mine, "the user's directory")
	assert.NoFileExists(t, filepath.Join(mine, "x.sock"))

	made := filepath.Join(t.TempDir(), "made", "x.sock")
	serveAt(t, made)
	assert.NoDirExists(t, filepath.Dir(made), "the directory the executor made")
}

// An executor whose parent died while it was starting (its parent is then
// another process: the one its client names in protocol.EnvParent is gone)
// exits at once, instead of serving forever.
func TestExecutorOrphanedAtStartExits(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d", "x.sock")
	cmd := exec.Command(executorBin, "serve", "--socket="+sock)
	cmd.Env = append(os.Environ(), protocol.EnvParent+"=1")
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("an executor whose parent is gone did not exit")
	}
	assert.NoDirExists(t, filepath.Dir(sock))
}

// An executor stopped while it starts (before its welcome) costs
// StallAfter, not StartTimeout: the start fails as unavailable, at once.
func TestExecutorStoppedWhileStartingIsGivenUp(t *testing.T) {
	c := client.New(client.Config{Path: executorBin, StartTimeout: 60 * time.Second, StallAfter: 300 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	// Stop every executor of this test's binary that serves and has not
	// yet welcomed this client: the one Info starts.
	stopped := make(chan int, 1)
	go func() {
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			for _, pid := range servingChildren() {
				syscall.Kill(pid, syscall.SIGSTOP)
				stopped <- pid
				return
			}
		}
	}()
	t0 := time.Now()
	_, err := c.Info(context.Background())
	pid := <-stopped
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err == nil {
		t.Skip("the executor welcomed before it was stopped")
	}
	assert.Less(t, time.Since(t0), 20*time.Second)
	assert.Contains(t, err.Error(), "the process was stopped")
}

// servingChildren are this process's children that run "serve".
func servingChildren() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if len(f) > 1 && f[1] == me && strings.Contains(string(cmdline), "\x00serve\x00") {
			pid, _ := strconv.Atoi(e.Name())
			pids = append(pids, pid)
		}
	}
	return pids
}
