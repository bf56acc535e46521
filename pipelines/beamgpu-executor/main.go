// Command beamgpu-executor is the GPU executor of beamgpu's pipelines.
//
// It is the process that runs the GPU ops of the raster, tensor and onnx
// step families for the (pure Go) workers, over the protocol of
// runtime/executor/protocol, with bulk data in shared memory.
//
// Built without tags (CGO_ENABLED=0 works) it is the CPU reference
// executor: it serves the steps' GPU ops with their CPU code, so the whole
// out-of-process path is tested without a GPU. Built with -tags cuda
// (containers/build-cuda.sh) it serves them with the steps' CUDA launches.
//
// Usage:
//
//	beamgpu-executor serve --socket=PATH [--max_concurrent=N] [--memory_budget=BYTES]
//	beamgpu-executor selftest
//	beamgpu-executor version
//
// The worker starts "serve" itself (package runtime/executor/client); run
// "selftest" by hand on a new machine or image: it prints the device and
// runs every op on a tiny input against its CPU twin, and its exit status
// says whether the executor is usable.
//
// An executor is a library (package serve): this main is the whole of it,
// the families it serves imported for their registrations.
package main

import (
	"os"

	_ "github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	_ "github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step/serve"
	_ "github.com/beamgpu/beamgpu/transforms/tensor"
)

func main() { os.Exit(serve.Main(os.Args[1:])) }
