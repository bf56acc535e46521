package step

import "github.com/beamgpu/beamgpu/runtime/backend"

// WithUse returns s for one use of it: the same step, whose Backend() is
// use (s.Backend() with its Use and NoGPU set, as ResolveUse takes it). A
// step that runs many things of its own, such as the onnx step's models,
// gives each use a value of its own; a pipeline that lists it among its
// steps (job.Pipeline.Steps, Backends for backend.Config.Steps) has the
// selector know the use from the start: its explain line, and a GPU
// request for a use that cannot run there (NoGPU) refused when the
// selector is made, before anything is built. Resolve resolves the use.
func WithUse(s Any, use backend.Step) Any { return withUse{Any: s, use: use} }

type withUse struct {
	Any
	use backend.Step
}

// Backend is the use.
func (w withUse) Backend() backend.Step { return w.use }
