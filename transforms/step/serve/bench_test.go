package serve

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
	_ "github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	_ "github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	steptest.MaybeServe()
	os.Exit(m.Run())
}

// The benchmark runs end to end against a reference executor (this test
// binary), at a size a test affords, and prints every part of its report.
func TestBenchRuns(t *testing.T) {
	var out bytes.Buffer
	err := runBench(context.Background(), &out, executortest.Use(), "ci", 1, true, 4, "dense,toa_ndvi")
	require.NoError(t, err, out.String())
	s := out.String()
	t.Log(s)
	for _, want := range []string{"ceiling    host copy, one core", "ceiling    host copy, shm.Copy", "echo 4 MiB there and back, read in place", "2 copies",
		"dense 1024x784 -> 256, ReLU", "toa_ndvi 1024x1024, 4 bands", "cpu + copy", "ratio ", "cpu in process",
		"phases: client encode", "transport", "executor decode", "cpu ", "executor encode", "client decode"} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "knn", "--steps chooses")
}

// With several devices (here 2 virtual ones) the benchmark measures each
// step on each device alone and on all at once, with the aggregate over one
// device's.
func TestBenchMeasuresEachDeviceAndAll(t *testing.T) {
	t.Setenv(executor.EnvReferenceDevices, "2")
	var out bytes.Buffer
	err := runBench(context.Background(), &out, executortest.Use(), "ci", 1, false, 0, "dense")
	require.NoError(t, err, out.String())
	s := out.String()
	t.Log(s)
	for _, want := range []string{"device 0: cpu-reference (test binary), virtual device 0 of 2", "device 1: ",
		"dense 1024x784 -> 256, ReLU: device 0 alone", "dense 1024x784 -> 256, ReLU: device 1 alone",
		"dense 1024x784 -> 256, ReLU: all 2 devices at once", "batches/s", "aggregate ", "x device 0's", "(2 perfect)"} {
		assert.Contains(t, s, want)
	}
	assert.Empty(t, os.Getenv(executor.EnvDevices), "the benchmark leaves no device choice behind")
}
