//go:build cuda && beamgpu_oplist

package serve

import (
	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// build, in a build with the tags cuda and beamgpu_oplist, names the ops the
// CUDA executor of the same main package serves (every GPU op whose step has
// a CUDA launch) without opening a device or linking the CUDA libraries
// (CGO_ENABLED=0): the worker image's build runs `ops` on it to write the
// image's label. Its ops run the steps' CPU code; it is never a worker's
// executor (its kind says so).
func build() (executor.Build, []server.Op) {
	var ops []server.Op
	b := executor.Build{Kind: "cuda op list (-tags cuda,beamgpu_oplist: lists the CUDA build's ops, serves none on a GPU)"}
	for _, s := range step.All() {
		if s.Backend().GPUOp == "" {
			continue
		}
		if s.HasLaunch() {
			ops = append(ops, s.ReferenceOp())
		} else {
			b.Missing = append(b.Missing, s.Backend().GPUOp+" (step "+s.Name()+"): no CUDA launch registered")
		}
	}
	return b, ops
}
