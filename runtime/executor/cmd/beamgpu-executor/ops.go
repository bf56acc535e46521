//go:build !cuda

package main

import (
	"fmt"
	"runtime"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/stepops"
)

// registerStepOps registers the steps' ops as the reference executor serves
// them: with the steps' CPU code.
func registerStepOps() {
	for _, op := range stepops.ReferenceOps() {
		server.Register(op)
	}
}

// build is the CPU reference executor. Its device says so, so that nobody
// mistakes it for a GPU.
func build() executor.Build {
	return executor.Build{Kind: "reference (CPU)", Device: func() string {
		return fmt.Sprintf("cpu-reference (%s/%s, %d CPUs; no GPU: ops run the steps' CPU code)", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	}}
}
