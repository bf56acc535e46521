package raster

import "github.com/beamgpu/beamgpu/runtime/backend"

// backendStep describes a raster step to the selector; a step with a GPU op
// carries the raster GPU hints.
func backendStep(name, gpuOp string) backend.Step {
	st := backend.Step{Name: name, GPUOp: gpuOp}
	if gpuOp != "" {
		st.Hints = gpuHints
	}
	return st
}
