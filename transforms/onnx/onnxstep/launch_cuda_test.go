//go:build cuda

package onnxstep_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/step/steptest"
)

// In the CUDA build the onnx step's GPU op has its launch, and the launch,
// run on the step's sample against a recorder, names kernels that are in
// the PTX with the arguments they take. No GPU needed: CI runs this
// (containers/build-cuda.sh).
func TestEveryLaunchMatchesThePTX(t *testing.T) { steptest.CheckLaunches(t) }
