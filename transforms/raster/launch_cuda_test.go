//go:build cuda

package raster_test

import (
	"testing"

	_ "github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In the CUDA build every GPU op of the family has a launch, and each launch,
// run on its step's sample against a recorder, names kernels that are in the
// PTX with the arguments they take. No GPU needed: CI runs this
// (containers/build-cuda.sh).
func TestEveryLaunchMatchesThePTX(t *testing.T) {
	checked := 0
	for _, s := range step.All() {
		if s.Backend().GPUOp == "" {
			continue
		}
		t.Run(s.Name(), func(t *testing.T) {
			r := steptest.CheckLaunch(t, s)
			assert.NotEmpty(t, r.Launches, "the launch runs a kernel")
		})
		checked++
	}
	require.Positive(t, checked)
}
