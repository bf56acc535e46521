//go:build cuda

package onnxstep

// The onnx step's launch in the CUDA executor: the model's plan run on the
// device (LaunchRun: package onnx's Plan.RunDevice).

import "github.com/beamgpu/beamgpu/transforms/step"

func init() { step.RegisterLaunch(StepRun, LaunchRun) }
