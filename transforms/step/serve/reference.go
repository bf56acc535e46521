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
// function. Its device says so, so that nobody mistakes it for a GPU. With
// BEAMGPU_REFERENCE_DEVICES=N it announces N virtual devices, each a queue
// of its own, so that CI tests what the executor does with several GPUs.
func build() (executor.Build, []server.Op) {
	var ops []server.Op
	for _, s := range step.All() {
		if op := s.ReferenceOp(); op != nil {
			ops = append(ops, op)
		}
	}
	base := fmt.Sprintf("cpu-reference (%s/%s, %d CPUs; no GPU: ops run the steps' CPU code)", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	return referenceBuild("reference (CPU)", base), ops
}

// referenceBuild is the reference executor's Build: one device described as
// base, or the virtual devices BEAMGPU_REFERENCE_DEVICES asks for (a
// malformed value is no device, with the reason).
func referenceBuild(kind, base string) executor.Build {
	devs, err := executor.VirtualDevices(base)
	return executor.Build{Kind: kind, Virtual: true,
		Devices: func() []string { return devs },
		NoDevice: func() string {
			if err != nil {
				return err.Error()
			}
			return ""
		}}
}
