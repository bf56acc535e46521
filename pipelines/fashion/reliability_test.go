package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/beamgpu/beamgpu/transforms/tensor/tensorbeam"
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
		Reference: refSrc, KNN: tensorbeam.KNNParams{K: 5, Classes: 10}}, selector(t, backend.CPU), &buf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "knn: k=5 is more than the 3 rows of the reference set")
	_, statErr := os.Stat(filepath.Join(out, "failed.jsonl"))
	assert.True(t, os.IsNotExist(statErr), "no per-record failures are written")
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
