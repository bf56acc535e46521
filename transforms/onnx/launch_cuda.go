//go:build cuda

package onnx

// The onnx step's launch in the CUDA executor: the model's plan run on the
// device (gpu.go, gpu_ops.go, gpu_nn.go and the kernels of kernels.cu).

import "github.com/beamgpu/beamgpu/transforms/step"

func init() { step.RegisterLaunch(StepRun, LaunchRun) }
