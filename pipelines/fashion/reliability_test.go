package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An empty test set is an error (unless --allow_empty), and the run
// writes its own metrics.json (count 0, this run's ID): the previous run's
// (count 200, accuracy 0.895) no longer stays to look like this one's.
func TestEmptyInputIsAnErrorAndLeavesNoStaleMetrics(t *testing.T) {
	out := t.TempDir()
	stale := `{"count": 200, "accuracy": 0.895}`
	require.NoError(t, os.WriteFile(filepath.Join(out, metricsFile), []byte(stale), 0o644))
	dir := t.TempDir()
	src := slice(t, dir, "empty", 0)
	src.Classes = len(ClassNames)
	cfg := Config{Sources: []tensor.Source{src}, Output: out, Model: ModelMLP, MLP: testModel, RunID: "0123456789ab"}
	var buf bytes.Buffer
	_, err := execute(context.Background(), cfg, selector(t, backend.CPU), &buf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no records")
	var m metrics
	data, err := os.ReadFile(filepath.Join(out, metricsFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	assert.Equal(t, 0, m.Count)
	assert.Equal(t, "0123456789ab", m.Run.ID)
	assert.Equal(t, []string{src.Images, src.Labels, testModel}, m.Run.Inputs)

	cfg.AllowEmpty = true
	_, err = execute(context.Background(), cfg, selector(t, backend.CPU), &buf)
	require.NoError(t, err)
}

// A label outside the classes (12 of 10) fails its file with the reason,
// instead of counting silently as unlabelled.
func TestLabelOutsideTheClassesFailsItsFile(t *testing.T) {
	dir := t.TempDir()
	src := slice(t, dir, "bad-labels", 20)
	l, err := tensor.ReadIDX(src.Labels)
	require.NoError(t, err)
	l.Data[7] = 12
	writeIDX(t, src.Labels, l)
	sources, err := discoverSources(dir, 64)
	require.NoError(t, err)
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := execute(context.Background(), Config{Sources: sources, Output: out, Model: ModelMLP, MLP: testModel}, selector(t, backend.CPU), &buf)
	require.NoError(t, err, buf.String())
	assert.Equal(t, 0, sum.Predicted)
	failures := readFailures(t, out)
	require.Len(t, failures, 1)
	assert.Contains(t, failures[0].Reason, src.Labels+": row 7: label 12 is not a class in [0, 10)")
}

// k larger than the reference set fails the run once, saying so, instead of
// failing every record.
func TestKLargerThanTheReferenceFailsOnce(t *testing.T) {
	ref := t.TempDir()
	slice(t, ref, "train", 3)
	for _, n := range []string{"images-idx3", "labels-idx1"} {
		require.NoError(t, os.Rename(filepath.Join(ref, "train-"+n+"-ubyte"), filepath.Join(ref, "train-"+n+"-ubyte.gz")))
	}
	refSrc, err := trainingSet(ref, 64)
	require.NoError(t, err)
	q := slice(t, t.TempDir(), "q", 100)
	out := t.TempDir()
	var buf bytes.Buffer
	_, err = execute(context.Background(), Config{Sources: []tensor.Source{q}, Output: out, Model: ModelKNN,
		Reference: refSrc, K: 5}, selector(t, backend.CPU), &buf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "knn: k=5 is more than the 3 rows of the reference set")
	// The failures' sink may or may not have run before the job failed
	// (Beam orders independent stages as it likes); either way no record
	// failed for k.
	data, statErr := os.ReadFile(filepath.Join(out, "failed.jsonl"))
	if statErr == nil {
		assert.NotContains(t, string(data), "k=5", "no per-record failures for k are written")
	} else {
		assert.True(t, os.IsNotExist(statErr), statErr)
	}
}

// A named pipe given as the images file fails its file at once, naming it,
// instead of blocking the run forever.
func TestFIFOInputFailsWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	slice(t, dir, "a-good", 30)
	fifo := filepath.Join(dir, "b-fifo-images-idx3-ubyte")
	require.NoError(t, mkfifo(fifo))
	t.Cleanup(func() { unblock(fifo) })
	sources, err := discoverSources(dir, 64)
	require.NoError(t, err)
	out := t.TempDir()
	done := make(chan error, 1)
	var buf bytes.Buffer
	var sum summary
	go func() {
		var err error
		sum, err = execute(context.Background(), Config{Sources: sources, Output: out, Model: ModelMLP, MLP: testModel}, selector(t, backend.CPU), &buf)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err, buf.String())
	case <-timeAfter(120):
		t.Fatal("a FIFO among the inputs blocked the run")
	}
	assert.Equal(t, 30, sum.Predicted)
	failures := readFailures(t, out)
	require.Len(t, failures, 1)
	assert.Contains(t, failures[0].Reason, fifo+": not a regular file: a named pipe (FIFO)")
}

// An executor that stops answering (it stops itself, SIGSTOP, in every
// batch) no longer hangs the run: each stall is seen within
// BEAMGPU_EXECUTOR_STALL_AFTER, the executor killed and replaced and the
// batch sent again once; then under --backend=auto the batch runs on the
// CPU (the outputs are the CPU's), and under --backend=gpu it fails with
// "GPU executor stalled for N s" and the counts reconcile.
func TestStalledExecutorFallsBackOrFails(t *testing.T) {
	src := slice(t, t.TempDir(), "t10k", 100)
	cfg := Config{Sources: []tensor.Source{src}, Model: ModelMLP, MLP: testModel}
	_, want := runOutputs(t, cfg, selector(t, backend.CPU))

	t.Setenv(client.EnvStallAfter, "200ms")
	require.NoError(t, client.CloseShared())
	executortest.StallAlways(true)
	defer func() {
		executortest.StallAlways(false)
		client.CloseShared()
	}()
	auto, err := backend.New(backend.Config{Default: backend.Auto, Steps: step.Backends(tensor.StepDecode, tensor.StepStandardize, tensor.StepMLP, tensor.StepKNN), Executor: steptest.UseExecutor()})
	require.NoError(t, err)
	t0 := time.Now()
	sum, got := runOutputs(t, cfg, auto)
	t.Logf("auto: %s", time.Since(t0))
	require.Empty(t, string(got["failed.jsonl"]), "under auto no batch fails")
	for name := range want {
		assert.Equal(t, string(want[name]), string(got[name]), name)
	}
	var fallbacks int64
	for _, st := range sum.Steps {
		fallbacks += st.Fallbacks
	}
	assert.Positive(t, fallbacks)

	cfg.Output = t.TempDir()
	var buf bytes.Buffer
	sum, err = execute(context.Background(), cfg, gpuSelector(t), &buf)
	require.NoError(t, err, buf.String())
	assert.Equal(t, 0, sum.Predicted)
	assert.Equal(t, 100, sum.Failed)
	for _, f := range readFailures(t, cfg.Output) {
		assert.Regexp(t, `GPU unavailable: GPU executor stalled for \d+ s \(op "[a-z_.]+", executor pid \d+: the process was stopped`, f.Reason)
	}
}
