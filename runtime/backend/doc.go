// Package backend chooses which implementation runs each step of a pipeline.
//
// The implementations are the CPU code, the GPU op served by the GPU
// executor, and the stub.
//
// The choice is made once, at pipeline construction, from a pipeline-wide
// default (--backend=auto|cpu|gpu|stub) and per-step overrides
// (--backend_override=ndvi=stub,toa=cpu). Every choice is recorded with its
// reason and the step's resource hints in a Report, printed at construction
// like spark-rapids' explain output and available as JSON.
//
// The rules:
//
//   - auto: the GPU where the step has a GPU op and an executor with a device
//     that serves the op is available, else the CPU, with the reason.
//   - cpu: the CPU implementation.
//   - gpu: the GPU op. If no executor is available, or it does not serve a
//     step's op, New fails before any pipeline is built, with the reason; a
//     step without a GPU op runs on the CPU under a pipeline-wide gpu default
//     and is an error as an explicit override.
//   - stub: the step's stand-in (same output type and shape, no computation).
//
// A pipeline lists the steps it builds in Config.Steps: an override naming
// any other step is an error at New that lists the pipeline's steps, and
// resolving a step the pipeline did not declare is an error, so that
// --backend_override, --help and the explain report know exactly the
// pipeline's steps. (Without Config.Steps, as in small tests, any step
// resolves.)
//
// A step that a pipeline applies to several things of its own (the ONNX
// step, to each model) describes each use (Step.Use): each gets its decision
// and explain line, and a use that cannot run on the GPU says why
// (Step.NoGPU: a model with operators that have no GPU kernel), which auto
// gives as its reason for the CPU and gpu refuses.
//
// Package backend depends on no step: steps describe themselves with a Step
// value and ask a Selector to resolve it.
package backend
