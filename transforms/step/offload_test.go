package step_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needTestExecutor skips a test that configures the test executor when the
// tests run against another one.
func needTestExecutor(t *testing.T) {
	t.Helper()
	if os.Getenv(client.EnvPath) != "" {
		t.Skip("needs the test executor, which the test configures")
	}
}

// The GPU implementation, through a real executor process (this test
// binary, serving the op with the CPU function), computes what the CPU
// does, and a batch the step rejects fails there with the CPU's error.
func TestOffloadThroughAnExecutor(t *testing.T) {
	steptest.UseExecutor()
	for seed := range uint64(5) {
		in, _ := stepScale.RandomInput(seed)
		cpu, err := steptest.Apply(stepScale, backend.CPU, in)
		require.NoError(t, err)
		gpu, err := stepScale.Offload(context.Background(), in.(vec))
		require.NoError(t, err)
		assert.NoError(t, steptest.Equal(in, cpu, gpu, stepScale.Tolerance()))
	}
	_, err := stepScale.Offload(context.Background(), vec{Name: "bad", X: []float32{1}})
	assert.ErrorContains(t, err, "bad vector")
	assert.False(t, errors.Is(err, step.ErrGPUUnavailable), "the batch's own error: no fallback")
}

// Offload falls back: what makes the GPU unavailable (no executor, one that
// keeps dying) wraps ErrGPUUnavailable, so that under --backend=auto the
// batch runs on the CPU; a batch over the executor's memory is run in
// halves where the step can split it, else it is out of memory.
func TestOffloadFailures(t *testing.T) {
	needTestExecutor(t)
	in := vec{Name: "v", X: make([]float32, 64<<10)} // 256 KiB in, 256 KiB out
	for i := range in.X {
		in.X[i] = float32(i)
	}
	want, err := scale(in)
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		setup   func()
		step    *step.Step[vec, vec]
		wantErr error // nil: the output is the CPU's
	}{
		{"no executor", func() { step.UseExecutor(filepath.Join(t.TempDir(), "no-such-executor")) }, stepScale, step.ErrGPUUnavailable},
		{"the executor dies on every batch", func() { steptest.UseExecutor(); executortest.CrashAlways(true) }, stepScale, step.ErrGPUUnavailable},
		{"over the memory budget, split", func() { steptest.UseExecutor(); executortest.MemoryBudget(300 << 10) }, stepScale, nil},
		{"over the memory budget, no split", func() { steptest.UseExecutor(); executortest.MemoryBudget(300 << 10) }, stepNoSplit, protocol.ErrOutOfMemory},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, client.CloseShared())
			c.setup()
			defer func() {
				executortest.CrashAlways(false)
				executortest.MemoryBudget(0)
				client.CloseShared()
				steptest.UseExecutor()
			}()
			got, err := c.step.Offload(context.Background(), in)
			if c.wantErr != nil {
				assert.ErrorIs(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// Side data crosses to the executor once; an executor that does not hold
// it (here a new one, after the first was stopped) answers with the
// protocol's StatusNeedSide, and the client sends the request again with
// the side data: the batch succeeds and the side data counts one more send.
func TestMissingSideDataIsSentAgain(t *testing.T) {
	needTestExecutor(t)
	require.NoError(t, client.CloseShared())
	steptest.UseExecutor()
	defer client.CloseShared()
	off := &vec{Name: "off", X: []float32{10, 20, 30}}
	in := shifted{V: vec{Name: "v", X: []float32{1, 2, 3}}, Off: off}
	want := vec{Name: "v", X: []float32{11, 22, 33}}
	before := stepShift.SideStats().Sent

	got, err := stepShift.Offload(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	got, err = stepShift.Offload(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, 1, stepShift.SideStats().Sent-before, "the second request only names the side data")

	require.NoError(t, client.CloseShared()) // the next call starts an executor that holds nothing
	got, err = stepShift.Offload(context.Background(), in)
	require.NoError(t, err, "the missing side data was sent again")
	assert.Equal(t, want, got)
	assert.Equal(t, 2, stepShift.SideStats().Sent-before, "sent again to the new executor, once")
}

// An op's own error whose text reads like the missing-side answer (the
// words of protocol.ErrNeedSide, and the text the client once matched) is
// that batch's failure: it is not taken for missing side data, and the
// request is not sent again (the op fails only the first time it sees the
// batch, so a request sent again would succeed and hide the error).
func TestAnErrorWithTheSameWordsIsNotMissingSideData(t *testing.T) {
	needTestExecutor(t)
	require.NoError(t, client.CloseShared())
	steptest.UseExecutor()
	defer client.CloseShared()
	off := &vec{Name: "off", X: []float32{1}}
	_, err := stepShift.Offload(context.Background(), shifted{V: vec{Name: "warm", X: []float32{1}}, Off: off})
	require.NoError(t, err)
	before := stepShift.SideStats().Sent

	for _, msg := range []string{protocol.ErrNeedSide.Error() + ": " + "k", "step: side data not loaded: k"} {
		_, err := stepShift.Offload(context.Background(), shifted{V: vec{Name: "once:" + msg, X: []float32{1}}, Off: off})
		require.Error(t, err)
		assert.ErrorContains(t, err, msg, "the op's own error")
		assert.NotErrorIs(t, err, protocol.ErrNeedSide)
		assert.NotErrorIs(t, err, step.ErrGPUUnavailable)
	}
	assert.Equal(t, 0, stepShift.SideStats().Sent-before, "no request was sent again with the side data")
}
