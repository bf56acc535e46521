//go:build !cuda

package serve

import (
	"fmt"
	"runtime"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// build is the CPU reference executor: every GPU op served by its step's CPU
// function. Its device says so, so that nobody mistakes it for a GPU.
func build() (executor.Build, []server.Op) {
	var ops []server.Op
	for _, s := range step.All() {
		if op := s.ReferenceOp(); op != nil {
			ops = append(ops, op)
		}
	}
	return executor.Build{Kind: "reference (CPU)", Device: func() string {
		return fmt.Sprintf("cpu-reference (%s/%s, %d CPUs; no GPU: ops run the steps' CPU code)", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	}}, ops
}
