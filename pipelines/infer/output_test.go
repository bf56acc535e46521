package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/transforms/nd"
	ndnpy "github.com/beamgpu/beamgpu/transforms/nd/npy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	// jobMainEnv makes this test binary the infer command as job.Main
	// runs it (signals, exit statuses), with the arguments it holds, one a
	// line.
	jobMainEnv = "BEAMGPU_INFER_JOB_MAIN"
	// holdEnv makes it a live run of another process: it takes the lock of
	// run holdRun in the directory it names, says "locked" and holds it
	// until its stdin closes.
	holdEnv = "BEAMGPU_INFER_HOLD_LOCK"
	holdRun = "00000000c0de"
)

// maybeChild runs this test binary as one of the children above, if asked.
func maybeChild() {
	if args, ok := os.LookupEnv(jobMainEnv); ok {
		os.Args = append([]string{"infer"}, strings.Split(args, "\n")...)
		main()
	}
	if dir := os.Getenv(holdEnv); dir != "" {
		release, err := jobfiles.LockRun(dir, holdRun)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		release()
		os.Exit(0)
	}
}

// startInfer runs the command (job.Main) in a process of its own.
func startInfer(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), jobMainEnv+"="+strings.Join(append(args, "--backend=cpu", "--progress=0"), "\n"))
	out := new(syncBuffer)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, out
}

// syncBuffer is a bytes.Buffer a child writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitExit waits up to limit for cmd's exit and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, out *syncBuffer) int {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("infer did not exit within %v:\n%s", limit, out.String())
	}
	return cmd.ProcessState.ExitCode()
}

// runFiles lists the run-scoped files under out (one level down too):
// temporaries, parts, locks.
func runFiles(t *testing.T, out string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if n := d.Name(); jobfiles.TempRun(n) != "" || strings.HasPrefix(n, ".beamgpu-run.") || strings.HasSuffix(n, ".part") || strings.HasSuffix(n, ".tmp") {
				found = append(found, path)
			}
		}
		return nil
	})
	return found
}

// bigInput writes a model and a .npy of n Fashion-MNIST rows (784 floats)
// for it, in dir.
func bigInput(t *testing.T, dir string, n int) (model, input string) {
	t.Helper()
	model, input = filepath.Join(dir, "mlp.onnx"), filepath.Join(dir, "x.npy")
	mlp(t, model)
	x := fashionRows(t, 1000)
	f, err := os.Create(input)
	require.NoError(t, err)
	hdr, err := ndnpy.EncodeHeader(nd.Float32, []int{n, 784})
	require.NoError(t, err)
	bw := bufio.NewWriterSize(f, 1<<20)
	bw.Write(hdr)
	for i := 0; i < n; i += 1000 {
		bw.Write(x.Data[:min(1000, n-i)*784*4])
	}
	require.NoError(t, bw.Flush())
	require.NoError(t, f.Close())
	return model, input
}

// A run never removes or overwrites one of its inputs: an input, a model or
// a labels file that is one of the files the run writes in --output (by
// its path, through a symlink, or a hard link) is refused with status 2
// before anything is removed, naming the input and the output.
func TestOutputHoldingAnInputIsRefused(t *testing.T) {
	d := t.TempDir()
	pred := filepath.Join(d, "predictions.npy")
	x := fashionRows(t, 2)
	writeNPY(t, pred, nd.Float32, []int{2, 1, 28, 28}, x.Data)
	before, err := os.ReadFile(pred)
	require.NoError(t, err)
	code, _, err := runInfer(t, "--model="+cnnModel, "--input="+pred, "--output="+d)
	assert.Equal(t, 2, code)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--input "+pred+" is "+pred+", a file the run removes and rewrites in --output "+d)

	link := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Symlink(d, link))
	code, _, err = runInfer(t, "--model="+cnnModel, "--input="+pred, "--output="+link)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "a run never removes or overwrites its inputs")

	// The model as summary.json, the labels as failed.jsonl of the output.
	model := filepath.Join(d, "summary.json")
	require.NoError(t, os.Link(cnnModel, model))
	in := filepath.Join(t.TempDir(), "x.npy")
	writeNPY(t, in, nd.Float32, []int{2, 1, 28, 28}, x.Data)
	code, _, err = runInfer(t, "--model="+model, "--input="+in, "--output="+d)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "--model "+model+" is "+model)
	assert.FileExists(t, model)
	require.NoError(t, os.Remove(model))
	labels := filepath.Join(d, "failed.jsonl")
	require.NoError(t, os.WriteFile(labels, []byte(strings.Join(fashionLabels, "\n")+"\n"), 0o644))
	code, _, err = runInfer(t, "--model="+cnnModel, "--input="+in, "--labels_file="+labels, "--output="+d)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "--labels_file "+labels+" is "+labels)

	after, err := os.ReadFile(pred)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the input is untouched")
	assert.FileExists(t, labels)

	// The same input with another --output runs.
	code, _, err = runInfer(t, "--model="+cnnModel, "--input="+pred, "--output="+t.TempDir(), "--backend=cpu")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
}

// --output at the filesystem root, or where the image glob would read the
// run's outputs (or the output directory) as images next time, is refused
// with status 2 before anything is written.
func TestOutputAtRootOrMatchedByTheGlobIsRefused(t *testing.T) {
	in := filepath.Join(t.TempDir(), "x.npy")
	writeNPY(t, in, nd.Float32, []int{2, 1, 28, 28}, fashionRows(t, 2).Data)
	up := strings.Repeat("../", strings.Count(t.TempDir(), "/"))
	for _, out := range []string{"/", t.TempDir() + "/" + up} {
		code, _, err := runInfer(t, "--model="+cnnModel, "--input="+in, "--output="+out)
		assert.Equal(t, 2, code)
		assert.ErrorContains(t, err, "is the filesystem root: refused", out)
	}
	assert.NoFileExists(t, "/predictions.npy")

	photos := t.TempDir()
	x := fashionRows(t, 3)
	for i := range 3 {
		gray(t, filepath.Join(photos, fmt.Sprintf("%d.png", i)), x, i, 28)
	}
	for _, c := range []struct{ input, output, want string }{
		{photos, photos, "matches predictions.npy, a file this run writes there: the next run would read its outputs as inputs"},
		{photos + "/*", photos, "matches predictions.npy"},
		{photos + "/*", filepath.Join(photos, "out"), "is matched by --input " + photos + "/*"},
	} {
		code, _, err := runInfer(t, "--model="+cnnModel, "--input="+c.input, "--output="+c.output, "--channels=1")
		assert.Equal(t, 2, code, c)
		assert.ErrorContains(t, err, c.want)
	}
	entries, err := os.ReadDir(photos)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "nothing written among the images")

	// A glob of PNGs does not match the outputs: the run goes ahead.
	code, _, err := runInfer(t, "--model="+cnnModel, "--input="+photos+"/*.png", "--output="+photos, "--channels=1", "--backend=cpu")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, 3, readSummary(t, photos).RowsPredicted)
}

// holdLock starts a process that holds the lock of run holdRun in dir.
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
	end := func() { once.Do(func() { stdin.Close(); cmd.Wait() }) }
	t.Cleanup(end)
	return cmd, end
}

// A second run into the --output of a live run is refused with status 2,
// naming the live run (pid, start), and leaves the live run's files as
// they are: here the live run is another process holding its lock, with
// files in flight.
func TestSecondRunIntoALiveRunsOutputIsRefused(t *testing.T) {
	out := t.TempDir()
	holder, end := holdLock(t, out)
	inFlight := []string{".predictions.npy.0." + holdRun + ".00000000.part", "..predictions.npy.0." + holdRun + ".00000001.part." + holdRun + ".0badcafe.tmp",
		".summary.json." + holdRun + ".01234567.tmp", "predictions.npy"}
	for _, f := range inFlight {
		require.NoError(t, os.WriteFile(filepath.Join(out, f), []byte("live"), 0o644))
	}
	in := filepath.Join(t.TempDir(), "x.npy")
	writeNPY(t, in, nd.Float32, []int{2, 1, 28, 28}, fashionRows(t, 2).Data)
	code, _, err := runInfer(t, "--model="+cnnModel, "--input="+in, "--output="+out, "--backend=cpu")
	assert.Equal(t, 2, code)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--output "+out+" is the output directory of a live run")
	assert.Contains(t, err.Error(), fmt.Sprintf("run %s, ", holdRun))
	assert.Contains(t, err.Error(), fmt.Sprintf(" pid %d, started ", holder.Process.Pid))
	for _, f := range inFlight {
		b, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Equal(t, "live", string(b), f)
	}

	// Once the live run is over, the next run has the directory: it
	// removes what the ended run left, and writes its own.
	end()
	code, _, err = runInfer(t, "--model="+cnnModel, "--input="+in, "--output="+out, "--backend=cpu")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Empty(t, runFiles(t, out))
	assert.Equal(t, 2, readSummary(t, out).RowsPredicted)
}

// Two real runs into one --output: the second, started while the first
// writes, is refused with status 2 naming it, and the first completes
// with every row (it used to fail: the second removed its files in flight).
func TestTwoRunsIntoOneOutput(t *testing.T) {
	dir := t.TempDir()
	model, in := bigInput(t, dir, 4000)
	out := filepath.Join(dir, "out")
	first, log := startInfer(t, "--model="+model, "--input="+in, "--output="+out, "--shard_rows=64", "--max_batch_size=64")
	var lock string
	for end := time.Now().Add(2 * time.Minute); lock == ""; time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(end), "the first run took no lock:\n%s", log.String())
		m, _ := filepath.Glob(filepath.Join(out, ".beamgpu-run.*.lock"))
		if len(m) > 0 {
			lock = m[0]
		}
	}
	second, log2 := startInfer(t, "--model="+model, "--input="+in, "--output="+out)
	assert.Equal(t, 2, waitExit(t, second, 2*time.Minute, log2), log2.String())
	assert.Contains(t, log2.String(), "is the output directory of a live run")
	assert.Contains(t, log2.String(), fmt.Sprintf(" pid %d, started ", first.Process.Pid))
	require.Equal(t, 0, waitExit(t, first, 5*time.Minute, log), log.String())
	assert.Equal(t, 4000, readSummary(t, out).RowsPredicted)
	assert.Empty(t, runFiles(t, out))
}

// SIGINT or SIGTERM while the run writes its part files: it exits 130 or
// 143, its writes are stopped before its temporaries are removed, so none
// is left, and what it says of them is true. A handful of tries each, the
// signal at a slightly different moment each time.
func TestInterruptedRunLeavesNoTemporaries(t *testing.T) {
	dir := t.TempDir()
	model, in := bigInput(t, dir, 20000)
	for i := range 6 {
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		out := filepath.Join(dir, fmt.Sprintf("out%d", i))
		cmd, log := startInfer(t, "--model="+model, "--input="+in, "--output="+out, "--shard_rows=16", "--max_batch_size=16")
		start := time.Now()
		for end := start.Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
			require.True(t, time.Now().Before(end), "no part file written:\n%s", log.String())
			if m, _ := filepath.Glob(filepath.Join(out, "*.part")); len(m) > 0 {
				break
			}
		}
		time.Sleep(time.Duration(i) * 50 * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(sig))
		code := waitExit(t, cmd, 2*time.Minute, log)
		msg := log.String()
		require.Equal(t, 128+int(sig), code, msg)
		assert.Empty(t, runFiles(t, out), "signal %v after %v", sig, time.Since(start))
		assert.Regexp(t, `infer: interrupted: \d+ temporary files removed\n`, msg)
		assert.NotContains(t, msg, "could not be removed")
		assert.Contains(t, msg, "the run did not finish; its cleanups ran")
		assert.NotContains(t, msg, "stopped before its cleanups were done")
	}
}
