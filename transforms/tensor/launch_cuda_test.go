//go:build cuda

package tensor_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	_ "github.com/beamgpu/beamgpu/transforms/tensor"
)

// In the CUDA build every GPU op of the family has a launch, and each launch,
// run on its step's sample against a recorder, names kernels that are in the
// PTX with the arguments they take. No GPU needed: CI runs this
// (containers/build-cuda.sh).
func TestEveryLaunchMatchesThePTX(t *testing.T) { steptest.CheckLaunches(t) }
