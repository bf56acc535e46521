package train

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// synthetic is a small 3-class problem: Gaussian blobs in 8 dimensions.
func synthetic(seed uint64, rows int) tensor.Batch {
	r := rand.New(rand.NewPCG(seed, 99))
	centres := [3][8]float64{}
	cr := rand.New(rand.NewPCG(1234, 5))
	for c := range centres {
		for j := range centres[c] {
			centres[c][j] = cr.NormFloat64() * 0.5
		}
	}
	b := tensor.Batch{Source: "synthetic", Rows: rows, Cols: 8, X: make([]float32, rows*8), Labels: make([]int32, rows)}
	for i := 0; i < rows; i++ {
		c := r.IntN(3)
		b.Labels[i] = int32(c)
		for j := 0; j < 8; j++ {
			b.X[i*8+j] = float32(centres[c][j] + r.NormFloat64())
		}
	}
	return b
}

func config(dir string) Config {
	return Config{Dims: []int{8, 16, 3}, Epochs: 3, BatchSize: 32, LR: 0.01, Seed: 42, CheckpointDir: dir, CheckpointEvery: 5}
}

func weights(m *tensor.MLP) [][]float32 {
	var w [][]float32
	for _, l := range m.Layers {
		w = append(w, l.W, l.B)
	}
	return w
}

func TestLearns(t *testing.T) {
	tr, va := synthetic(1, 600), synthetic(2, 300)
	var progress bytes.Buffer
	cfg := Config{Dims: []int{8, 16, 3}, Epochs: 5, BatchSize: 32, LR: 0.01, Seed: 1, Progress: &progress}
	m, res, err := Run(context.Background(), cfg, tr, va)
	require.NoError(t, err)
	require.Len(t, res.History, 5)
	assert.Less(t, res.History[4].Loss, res.History[0].Loss/2, "loss decreases")
	assert.Greater(t, res.ValidAccuracy, 0.75) // chance is 1/3
	assert.Equal(t, 5*19, res.Steps)
	require.NoError(t, m.CheckShape(8, 16, 3))
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	require.Len(t, lines, 5)
	assert.Regexp(t, `^epoch 5/5 step 95 loss \d+\.\d{4} examples/s \d+ valid_acc 0\.\d{4} elapsed `, lines[4])

	// Same config, same weights.
	m2, _, err := Run(context.Background(), cfg, tr, va)
	require.NoError(t, err)
	assert.Equal(t, weights(m), weights(m2))
}

func TestResumeIsBitwiseIdentical(t *testing.T) {
	tr, va := synthetic(1, 600), synthetic(2, 100)
	for _, sched := range []string{Constant, Cosine} {
		t.Run(sched, func(t *testing.T) {
			cfg := config(t.TempDir())
			cfg.Schedule = sched
			want, res, err := Run(context.Background(), cfg, tr, va)
			require.NoError(t, err)
			require.Equal(t, 57, res.Steps) // 3 epochs of 19 steps

			// Stopped at steps 7 (mid-epoch, between checkpoints), 19 (an
			// epoch boundary) and 40, then resumed to the end.
			cfg = config(t.TempDir())
			cfg.Schedule = sched
			for _, stop := range []int{7, 19, 40} {
				cfg.StopAfter = stop
				_, res, err := Run(context.Background(), cfg, tr, va)
				require.NoError(t, err)
				assert.True(t, res.Stopped)
				assert.Equal(t, stop, res.Steps)
				assert.Equal(t, checkpointName(stop), filepath.Base(res.Checkpoint))
			}
			cfg.StopAfter = 0
			var progress bytes.Buffer
			cfg.Progress = &progress
			got, res, err := Run(context.Background(), cfg, tr, va)
			require.NoError(t, err)
			assert.Equal(t, checkpointName(40), filepath.Base(res.ResumedFrom))
			assert.Contains(t, progress.String(), "resumed from ")
			assert.Equal(t, 57, res.Steps)
			assert.Equal(t, weights(want), weights(got))

			// Only the Keep=2 newest checkpoints remain.
			names, err := checkpoints(cfg.CheckpointDir)
			require.NoError(t, err)
			assert.Equal(t, []string{checkpointName(57), checkpointName(55)}, names)
		})
	}
}

// cancelAfter cancels its context once Write has seen n lines.
type cancelAfter struct {
	n      int
	cancel func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.n -= bytes.Count(p, []byte("\n"))
	if c.n <= 0 {
		c.cancel()
	}
	return len(p), nil
}

func TestCancelWritesCheckpoint(t *testing.T) {
	tr := synthetic(1, 600)
	want, _, err := Run(context.Background(), config(t.TempDir()), tr, tensor.Batch{})
	require.NoError(t, err)

	cfg := config(t.TempDir())
	cfg.CheckpointEvery = 1000 // only at cancellation
	cfg.LogEvery = 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.Progress = &cancelAfter{n: 4, cancel: cancel} // after step 12
	_, res, err := Run(ctx, cfg, tr, tensor.Batch{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 12, res.Steps)
	assert.Equal(t, checkpointName(12), filepath.Base(res.Checkpoint))

	cfg = config(cfg.CheckpointDir)
	got, res, err := Run(context.Background(), cfg, tr, tensor.Batch{})
	require.NoError(t, err)
	assert.Equal(t, checkpointName(12), filepath.Base(res.ResumedFrom))
	assert.Equal(t, weights(want), weights(got))
}

func TestCorruptNewestCheckpointFallsBack(t *testing.T) {
	tr := synthetic(1, 600)
	want, _, err := Run(context.Background(), config(t.TempDir()), tr, tensor.Batch{})
	require.NoError(t, err)

	for name, damage := range map[string]func([]byte) []byte{
		"bit flip":  func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b },
		"truncated": func(b []byte) []byte { return b[:len(b)-100] },
		"empty":     func(b []byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := config(t.TempDir())
			cfg.StopAfter = 30
			_, _, err := Run(context.Background(), cfg, tr, tensor.Batch{})
			require.NoError(t, err)
			names, err := checkpoints(cfg.CheckpointDir)
			require.NoError(t, err)
			require.Equal(t, []string{checkpointName(30), checkpointName(25)}, names)
			newest := filepath.Join(cfg.CheckpointDir, names[0])
			data, err := os.ReadFile(newest)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(newest, damage(data), 0o644))

			cfg.StopAfter = 0
			var progress bytes.Buffer
			cfg.Progress = &progress
			got, res, err := Run(context.Background(), cfg, tr, tensor.Batch{})
			require.NoError(t, err)
			assert.Contains(t, progress.String(), "skipping unusable checkpoint: "+newest)
			assert.Equal(t, checkpointName(25), filepath.Base(res.ResumedFrom))
			assert.Equal(t, weights(want), weights(got), "the fallback run replays steps 26-30 identically")
		})
	}
}

func TestCheckpointOfAnotherRunIsRefused(t *testing.T) {
	tr := synthetic(1, 600)
	cfg := config(t.TempDir())
	cfg.StopAfter = 5
	_, _, err := Run(context.Background(), cfg, tr, tensor.Batch{})
	require.NoError(t, err)
	cfg.StopAfter = 0
	cfg.Seed = 7
	_, _, err = Run(context.Background(), cfg, tr, tensor.Batch{})
	assert.ErrorContains(t, err, "was written by a run with seed 42")
	assert.ErrorContains(t, err, "use another checkpoint directory or remove it")
	cfg.Seed = 42
	cfg.Dims = []int{8, 10, 3}
	_, _, err = Run(context.Background(), cfg, tr, tensor.Batch{})
	assert.ErrorContains(t, err, "belongs to another model")
}

func TestConfigAndDataErrors(t *testing.T) {
	tr := synthetic(1, 60)
	ctx := context.Background()
	_, _, err := Run(ctx, Config{Dims: []int{8}, Epochs: 1, BatchSize: 1}, tr, tensor.Batch{})
	assert.ErrorContains(t, err, "Dims needs at least")
	_, _, err = Run(ctx, Config{Dims: []int{8, 3}, Epochs: 1, BatchSize: 1, Schedule: "step"}, tr, tensor.Batch{})
	assert.ErrorContains(t, err, `unknown schedule "step"`)
	_, _, err = Run(ctx, Config{Dims: []int{9, 3}, Epochs: 1, BatchSize: 1}, tr, tensor.Batch{})
	assert.EqualError(t, err, "train: synthetic[0:60] has 8 columns, the model takes 9")
	bad := tr
	bad.Labels = append([]int32(nil), tr.Labels...)
	bad.Labels[5] = 3
	_, _, err = Run(ctx, Config{Dims: []int{8, 3}, Epochs: 1, BatchSize: 1}, bad, tensor.Batch{})
	assert.EqualError(t, err, "train: synthetic: row 5: label 3 is not in [0, 3)")
	bad.X = append([]float32(nil), tr.X...)
	bad.X[17] = float32(math.NaN())
	_, _, err = Run(ctx, Config{Dims: []int{8, 3}, Epochs: 1, BatchSize: 1}, bad, tensor.Batch{})
	assert.EqualError(t, err, "train: synthetic: row 2 column 1: value is NaN")
	_, _, err = Run(ctx, Config{Dims: []int{8, 3}, Epochs: 1, BatchSize: 1, LR: 1e38}, tr, tensor.Batch{})
	assert.ErrorContains(t, err, "lower the learning rate")
}
