package onnxstep

import (
	"errors"
	"fmt"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/onnx"
)

// LaunchRun is the onnx step's GPU implementation, what the CUDA executor
// runs for op onnx.run (launch_cuda.go registers it): the batch's plan run
// on the device of c. A batch the plan
// refuses, or whose run finds an input out of a kernel's domain, runs on
// the CPU, for its error (or, for an index out of range, the CPU's own
// result).
func LaunchRun(c gpu.Call, in Input) (Output, error) {
	if in.Model == nil {
		return Run(in)
	}
	p, err := in.Model.Plan(in.Inputs)
	if err != nil {
		return Run(in)
	}
	outs, _, err := p.RunDevice(c, in.Inputs)
	if errors.Is(err, onnx.ErrIndexRange) {
		return Run(in)
	}
	if err != nil {
		return Output{}, fmt.Errorf("%s: %w", in.Model.Name, err)
	}
	return Output{Outputs: outs}, nil
}
