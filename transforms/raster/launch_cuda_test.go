//go:build cuda

package raster_test

import (
	"testing"

	_ "github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
)

// In the CUDA build every GPU op of the family has a launch, and each launch,
// run on its step's sample against a recorder, names kernels that are in the
// PTX with the arguments they take. No GPU needed: CI runs this
// (containers/build-cuda.sh).
func TestEveryLaunchMatchesThePTX(t *testing.T) { steptest.CheckLaunches(t) }
