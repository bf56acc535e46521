package serve

import (
	"bytes"
	"context"
	"os"
	"testing"

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
