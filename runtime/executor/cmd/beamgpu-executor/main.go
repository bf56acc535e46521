// Command beamgpu-executor is the GPU executor: the process that runs
// beamgpu's GPU ops for the (pure Go) workers, over the protocol of package
// runtime/executor/protocol, with bulk data in shared memory.
//
// Built without tags (CGO_ENABLED=0 works) it is the CPU reference
// executor: it serves the steps' GPU ops with their CPU code
// (runtime/executor/stepops), so the whole out-of-process path is tested
// without a GPU. Built with -tags cuda it serves the same op names with
// CUDA kernels.
//
// Usage:
//
//	beamgpu-executor serve --socket=PATH [--max_concurrent=N] [--memory_budget=BYTES]
//	beamgpu-executor selftest
//	beamgpu-executor version
//
// The worker starts "serve" itself (package runtime/executor/client); run
// "selftest" by hand on a new machine or image: it prints the device and
// runs every op that can check itself on a tiny input, and its exit status
// says whether the executor is usable.
package main

import (
	"os"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
)

func main() {
	// Generic ops for the transport's tests and benchmarks: echo, sum_f32,
	// sleep, crash, fatal.
	for _, op := range testops.All() {
		server.Register(op)
	}
	registerStepOps() // the steps' ops: CPU code here, CUDA kernels with -tags cuda
	os.Exit(executor.Main(build(), os.Args[1:], os.Stdout, os.Stderr))
}
