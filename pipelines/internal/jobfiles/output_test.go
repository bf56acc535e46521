package jobfiles

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdEnv makes the test binary a live run of another process: it takes
// the lock of run 0000000000aa in the directory the variable names, says
// "locked" and holds it until its stdin closes.
const holdEnv = "BEAMGPU_JOBFILES_HOLD_LOCK"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		release, err := LockRun(dir, "0000000000aa")
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdLock starts a process that holds the lock of run 0000000000aa in
// dir, and returns it and the function that ends it.
func holdLock(t *testing.T, dir string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	require.Equal(t, "locked\n", line)
	var once sync.Once
	end := func() {
		once.Do(func() {
			stdin.Close()
			cmd.Wait()
		})
	}
	t.Cleanup(end)
	return cmd, end
}

// A second run into the output directory of a live run (another process)
// is refused, naming the live run's pid and start, and the live run's
// files are left alone; once it is over, the directory is free.
func TestLockRunRefusesTheDirectoryOfALiveRun(t *testing.T) {
	out := t.TempDir()
	live := "0000000000aa"
	before := time.Now().Add(-time.Second)
	holder, end := holdLock(t, out)
	mine := []string{".predictions.npy." + live + ".0a1b2c3d.tmp", ".predictions.npy.0." + live + ".00000003.part"}
	for _, f := range mine {
		require.NoError(t, os.WriteFile(filepath.Join(out, f), []byte("in flight"), 0o644))
	}

	for _, dir := range []string{out, filepath.Join(out, "sub")} {
		_, err := LockRun(dir, "0000000000bb")
		var busy *BusyError
		require.ErrorAs(t, err, &busy, dir)
		assert.Equal(t, holder.Process.Pid, busy.Live.PID)
		assert.Equal(t, live, busy.Live.Run)
		assert.WithinRange(t, busy.Live.Started, before, time.Now())
		assert.Contains(t, err.Error(), fmt.Sprintf("pid %d, started ", holder.Process.Pid))
		assert.Contains(t, err.Error(), "a live run")
	}
	// The parent of the live run's directory holds it: refused too.
	_, err := LockRun(filepath.Dir(out), "0000000000bb")
	assert.ErrorContains(t, err, "holds "+out)

	removed, err := RemoveStale(out)
	require.NoError(t, err)
	assert.Empty(t, removed)
	for _, f := range mine {
		assert.FileExists(t, filepath.Join(out, f), "a live run's file")
	}

	end()
	release, err := LockRun(out, "0000000000bb")
	require.NoError(t, err, "the live run is over")
	defer release()
	removed, err = RemoveStale(out)
	require.NoError(t, err)
	assert.Len(t, removed, len(mine), "the run that ended left them: stale now")
}

// Two runs of this process taking one directory at once: exactly one gets it.
func TestLockRunOneOfTwoAtOnce(t *testing.T) {
	for range 20 {
		out := t.TempDir()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		releases := make([]func(), 2)
		for i, run := range []string{"0000000000a1", "0000000000a2"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				releases[i], errs[i] = LockRun(out, run)
			}()
		}
		wg.Wait()
		got := 0
		for i := range errs {
			if errs[i] == nil {
				got++
				releases[i]()
			} else {
				var busy *BusyError
				assert.ErrorAs(t, errs[i], &busy)
			}
		}
		require.Equal(t, 1, got)
		left, _ := os.ReadDir(out)
		assert.Empty(t, left, "no lock or claim file left")
	}
}

// Every temporary name a run writes under carries its run ID.
func TestWriteFileTemporaryCarriesTheRun(t *testing.T) {
	dir := t.TempDir()
	run := NewRunID()
	var seen []string
	require.NoError(t, WriteFile(context.Background(), run, filepath.Join(dir, ".x.npy."+run+".00000001.part"), func(w io.Writer) error {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			seen = append(seen, e.Name())
		}
		return nil
	}))
	require.Len(t, seen, 1)
	assert.Equal(t, run, TempRun(seen[0]), seen[0])
	assert.Error(t, WriteFile(context.Background(), "", filepath.Join(dir, "y"), func(io.Writer) error { return nil }), "a write with no run")
	require.NoError(t, CheckWritable("output", dir, run))
}

// StopWrites stops a run's writes: it waits for a write under way, and
// none starts after it.
func TestStopWritesWaitsForWriters(t *testing.T) {
	dir := t.TempDir()
	run := NewRunID()
	inside, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- WriteFile(context.Background(), run, filepath.Join(dir, "a"), func(w io.Writer) error {
			close(inside)
			<-finish
			return nil
		})
	}()
	<-inside
	stopped := make(chan bool)
	go func() { stopped <- StopWrites(run, 10*time.Second) }()
	select {
	case <-stopped:
		t.Fatal("StopWrites returned with a write under way")
	case <-time.After(100 * time.Millisecond):
	}
	close(finish)
	require.NoError(t, <-done)
	assert.True(t, <-stopped)
	err := WriteFile(context.Background(), run, filepath.Join(dir, "b"), func(io.Writer) error { return nil })
	assert.ErrorIs(t, err, ErrInterrupted)
	assert.NoFileExists(t, filepath.Join(dir, "b"))
	assert.Empty(t, RunTemps(dir, run))
	assert.True(t, StopWrites(NewRunID(), 0), "a run with no writer stops at once")
}

// Check refuses an output directory where the run would remove or
// overwrite one of its inputs, the filesystem root, and one its input glob
// matches; before anything is written.
func TestOutputCheck(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "d")
	require.NoError(t, os.MkdirAll(d, 0o755))
	pred := filepath.Join(d, "predictions.npy")
	require.NoError(t, os.WriteFile(pred, []byte("input"), 0o644))
	other := filepath.Join(root, "x.npy")
	require.NoError(t, os.WriteFile(other, []byte("input"), 0o644))
	require.NoError(t, os.Symlink(d, filepath.Join(root, "link")))
	require.NoError(t, os.Symlink(pred, filepath.Join(root, "pred-link.npy")))
	require.NoError(t, os.Link(pred, filepath.Join(root, "pred-hard.npy")))
	require.NoError(t, os.Symlink("/", filepath.Join(root, "slash")))
	temp := filepath.Join(d, ".m.onnx.0123456789ab.tmp")
	require.NoError(t, os.WriteFile(temp, nil, 0o644))
	out := func(dir string, in ...Input) Output {
		return Output{Program: "infer", Dir: dir, Run: "00000000000f", Files: []string{"predictions.npy", "summary.json"}, Inputs: in}
	}
	for _, c := range []struct {
		name string
		o    Output
		want string
	}{
		{"the input is an output", out(d, Input{Flag: "input", Path: pred}), "--input " + pred + " is " + pred + ", a file the run removes and rewrites in --output " + d},
		{"through a symlinked output", out(filepath.Join(root, "link"), Input{Flag: "input", Path: pred}), "a run never removes or overwrites its inputs"},
		{"a symlinked input", out(d, Input{Flag: "input", Path: filepath.Join(root, "pred-link.npy")}), "a run never removes or overwrites its inputs"},
		{"a hard link", out(d, Input{Flag: "model", Path: filepath.Join(root, "pred-hard.npy")}), "--model " + filepath.Join(root, "pred-hard.npy") + " is " + pred},
		{"with ..", out(filepath.Join(d, "..", "d"), Input{Flag: "input", Path: pred}), "a run never removes or overwrites its inputs"},
		{"an input named as a temporary", out(d, Input{Flag: "model", Path: temp}), "named as a run's temporary or lock file"},
		{"the root", out("/"), "--output / is the filesystem root"},
		{"the root with ..", out(filepath.Join(root, "..", "..", "..", "..", "..", "..", "..", "..")), "is the filesystem root"},
		{"the root through a symlink", out(filepath.Join(root, "slash")), "is the filesystem root"},
		{"the glob matches the output's files", out(d, Input{Flag: "input", Path: filepath.Join(d, "*"), Glob: true}), "matches predictions.npy, a file this run writes there"},
		{"the glob matches through a symlink", out(filepath.Join(root, "link"), Input{Flag: "input", Path: filepath.Join(d, "*.npy"), Glob: true}), "the next run would read its outputs as inputs"},
		{"the glob matches the output", out(filepath.Join(d, "out"), Input{Flag: "input", Path: filepath.Join(d, "*"), Glob: true}), "is matched by --input"},
		{"an object store", out("memfs://b/d", Input{Flag: "input", Path: "memfs://b/d/predictions.npy"}), "a run never removes or overwrites its inputs"},
		{"an object store's glob", out("memfs://b/d", Input{Flag: "input", Path: "memfs://b/d/*", Glob: true}), "matches predictions.npy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorContains(t, c.o.Check(), c.want)
		})
	}
	for _, o := range []Output{
		out(filepath.Join(root, "e"), Input{Flag: "input", Path: other}, Input{Flag: "model", Path: pred}),
		out(d, Input{Flag: "input", Path: other}),
		out(d, Input{Flag: "input", Path: filepath.Join(d, "*.png"), Glob: true}),
		out(filepath.Join(root, "new", "dir"), Input{Flag: "input", Path: filepath.Join(d, "*"), Glob: true}),
		out("memfs://b/e", Input{Flag: "input", Path: "memfs://b/d/*", Glob: true}),
	} {
		assert.NoError(t, o.Check(), "%+v", o)
	}
	data, err := os.ReadFile(pred)
	require.NoError(t, err)
	assert.Equal(t, "input", string(data), "nothing was removed")
	assert.True(t, strings.HasPrefix(resolve(filepath.Join(root, "link", "x")), resolve(d)))
}
