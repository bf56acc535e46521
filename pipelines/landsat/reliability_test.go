package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rastertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A band file that is a named pipe fails its scene at once, naming the
// file, and the other scenes complete: opening it for reading used to block
// the run forever.
func TestFIFOBandFailsItsSceneWithoutBlocking(t *testing.T) {
	in := t.TempDir()
	copyDir(t, sceneDir(), filepath.Join(in, "a"))
	good, bad := "LC08_L1TP_000003_20200101_20200101_01_T1", filepath.Join(in, "b")
	require.NoError(t, rastertest.WriteScene(filepath.Join(in, "b"), rastertest.Scene{ProductID: good, Width: 40, Height: 32}))
	fifo := filepath.Join(bad, good+"_B4.TIF")
	require.NoError(t, os.Remove(fifo))
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	t.Cleanup(func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	scenes, err := discoverScenes(in)
	require.NoError(t, err)
	type result struct {
		sum summary
		out string
	}
	done := make(chan result, 1)
	go func() {
		sum, out := runScenes(t, scenes, backend.CPU, 16)
		done <- result{sum, out}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("a FIFO among the band files blocked the run")
	}
	assert.Equal(t, []int{2, 1, 1}, []int{r.sum.In, r.sum.Done, r.sum.Failed})
	failures := readFailures(t, r.out)
	require.Len(t, failures, 1)
	assert.Contains(t, failures[0].Reason, fifo+": not a regular file: a named pipe (FIFO)")
}

// A product ID that is a name the run reserves (summary.json, failed.jsonl)
// fails its scene; the run writes its reports and the counts reconcile.
func TestReservedProductIDIsRefused(t *testing.T) {
	in := t.TempDir()
	for i, id := range []string{"summary.json", "FAILED.JSONL"} {
		require.NoError(t, rastertest.WriteScene(filepath.Join(in, string(rune('a'+i))), rastertest.Scene{ProductID: id, Width: 20, Height: 16}))
	}
	copyDir(t, sceneDir(), filepath.Join(in, "c"))
	scenes, err := discoverScenes(in)
	require.NoError(t, err)
	sum, out := runScenes(t, scenes, backend.CPU, 16)
	assert.Equal(t, []int{3, 1, 2}, []int{sum.In, sum.Done, sum.Failed})
	for _, f := range readFailures(t, out) {
		assert.Contains(t, f.Reason, "is a name the run reserves for its own files (summary.json, failed.jsonl)")
	}
	fi, err := os.Stat(filepath.Join(out, summaryFile))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
}

// A product that fails in a rerun loses the files of its earlier run: its
// directory never holds outputs older than the summary that says it failed.
// summary.json names the run.
func TestFailedRerunRemovesTheProductsEarlierFiles(t *testing.T) {
	id := "LC08_L1TP_000004_20200101_20200101_01_T1"
	in := filepath.Join(t.TempDir(), id)
	require.NoError(t, rastertest.WriteScene(in, rastertest.Scene{ProductID: id, Width: 48, Height: 32,
		TIFF: rastertest.TIFF{Tiled: true, BlockW: 16, BlockH: 16, Compression: rastertest.Deflate}}))
	out := t.TempDir()
	cfg := Config{Scenes: []string{in}, Output: out, TileSize: 16, RunID: "00000000000a", Args: []string{"--x"}, Started: time.Now()}
	var buf bytes.Buffer
	sum, err := execute(t.Context(), cfg, selector(t, backend.CPU), &buf)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Done)
	require.FileExists(t, filepath.Join(out, id, "ndvi.npy"))

	// The rerun: the last tile of band 4 corrupt (the scene fails after
	// its scan, in the read step).
	b4 := filepath.Join(in, id+"_B4.TIF")
	data, err := os.ReadFile(b4)
	require.NoError(t, err)
	l, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), b4)
	require.NoError(t, err)
	last := len(l.Offsets) - 1
	for i := l.Offsets[last]; i < l.Offsets[last]+l.Counts[last]; i++ {
		data[i] ^= 0xa5
	}
	require.NoError(t, os.WriteFile(b4, data, 0o644))
	cfg.RunID = "00000000000b"
	sum, err = execute(t.Context(), cfg, selector(t, backend.CPU), &buf)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Failed)
	assert.NoDirExists(t, filepath.Join(out, id), "the product's files of the earlier run")
	var rs runSummary
	data, err = os.ReadFile(filepath.Join(out, summaryFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rs))
	assert.Equal(t, "00000000000b", rs.Run.ID)
	assert.Equal(t, []string{in}, rs.Run.Inputs)
	assert.Equal(t, []string{"--x"}, rs.Run.Args)
	assert.NotEmpty(t, rs.Run.Started)
}

// bigScene writes a scene large enough that a run lasts a few seconds.
func bigScene(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "LC08_L1TP_000009_20200101_20200101_01_T1")
	require.NoError(t, rastertest.WriteScene(dir, rastertest.Scene{ProductID: filepath.Base(dir), Width: 2400, Height: 2400,
		TIFF: rastertest.TIFF{Tiled: true, BlockW: 256, BlockH: 256}}))
	return dir
}

// startPipeline runs main() (job.Main) in a process of its own.
func startPipeline(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), jobMainEnv+"="+strings.Join(append(args, "--backend=cpu", "--progress=0"), "\n"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &out
}

// temps lists the run-scoped temporary and lock files under out.
func temps(t *testing.T, out string) []string {
	var found []string
	for _, f := range files(t, out) {
		if jobfiles.TempRun(filepath.Base(f)) != "" || strings.HasPrefix(filepath.Base(f), ".beamgpu-run.") {
			found = append(found, f)
		}
	}
	return found
}

// waitFor polls cond every 20 ms for up to limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, limit)
		}
	}
}

// waitExit waits for cmd's exit, up to limit, and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, out *bytes.Buffer) int {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the pipeline did not exit within %v:\n%s", limit, tailLines(out.String(), 20))
	}
	return cmd.ProcessState.ExitCode()
}

// SIGTERM and SIGINT stop a run: it exits 128+signal saying what was
// finished, and leaves no temporary file, lock or executor behind.
func TestInterruptedRunRemovesItsTemporaries(t *testing.T) {
	in := bigScene(t)
	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			cmd, log := startPipeline(t, "--input="+in, "--output="+out, "--tile_size=128")
			waitFor(t, 120*time.Second, "a temporary file", func() bool {
				for _, f := range temps(t, out) {
					if strings.HasSuffix(f, ".tmp") {
						return true
					}
				}
				return false
			})
			require.NoError(t, cmd.Process.Signal(sig))
			code := waitExit(t, cmd, 60*time.Second, log)
			assert.Equal(t, 128+int(sig), code, tailLines(log.String(), 20))
			assert.Contains(t, log.String(), "landsat: interrupted: 0 of 1 scenes were finished and published")
			assert.Contains(t, log.String(), "interrupted by "+name)
			assert.Empty(t, temps(t, out))
		})
	}
}

// A run killed outright (kill -9) leaves its temporaries; the next run in
// the same output directory recognises them by their run-scoped names
// (their run holds no lock) and removes them, and says so.
func TestKilledRunsTemporariesAreRemovedByTheNextRun(t *testing.T) {
	in := bigScene(t)
	out := t.TempDir()
	cmd, log := startPipeline(t, "--input="+in, "--output="+out, "--tile_size=128")
	waitFor(t, 120*time.Second, "a temporary file", func() bool { return len(temps(t, out)) > 1 })
	require.NoError(t, cmd.Process.Kill())
	waitExit(t, cmd, 30*time.Second, log)
	left := temps(t, out)
	require.NotEmpty(t, left)

	cmd, log = startPipeline(t, "--input="+filepath.Join("testdata", raster.SampleSceneID), "--output="+out)
	code := waitExit(t, cmd, 120*time.Second, log)
	require.Equal(t, 0, code, tailLines(log.String(), 20))
	assert.Regexp(t, `landsat: removed \d+ temporary files of earlier runs that were killed`, log.String())
	assert.Empty(t, temps(t, out))
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
