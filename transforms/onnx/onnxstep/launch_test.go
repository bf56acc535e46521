package onnxstep_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu/gpuemu"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/internal/kernelemu"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An index out of range on the device (a kernel cannot return an error)
// leaves the batch to the CPU, whose error names it; a good batch's
// outputs come from the device. The device is the emulator with the
// kernels compiled for the host.
func TestLaunchRunGatherOutOfRange(t *testing.T) {
	if !kernelemu.Available {
		t.Skip("the kernel emulator needs cgo")
	}
	dev := gpuemu.New(map[*gpu.Module]gpuemu.KernelFunc{onnx.Module: kernelemu.Launch})
	m, err := onnxtest.Load(onnxtest.Model(13,
		[]*onnxpb.NodeProto{onnxtest.Node("Gather", []string{"table", "ids"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("ids", nd.Int64, -1)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 2)},
		onnxtest.Init("table", nd.Of([]float32{1, 2, 3, 4, 5, 6}, 3, 2))))
	require.NoError(t, err)
	launch := func(ids ...int64) (onnxstep.Output, error) {
		var out onnxstep.Output
		err := dev.Launch(func(c gpu.Call) error {
			var err error
			out, err = onnxstep.LaunchRun(c, onnxstep.Input{Model: m, Inputs: []nd.Array{nd.Of(ids, len(ids))}})
			return err
		})
		return out, err
	}
	out, err := launch(2, -3, 1)
	require.NoError(t, err)
	assert.Equal(t, []float32{5, 6, 1, 2, 3, 4}, nd.MustAs[float32](out.Outputs[0]))
	assert.Positive(t, dev.Stats().Kernels["transforms/onnx.gather"])
	_, err = launch(0, 3)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "index 3 (element 1 of indices) is out of range for axis 0 of size 3")
}
