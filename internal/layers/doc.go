// Package layers holds the project's architecture as a test: which
// packages may import which. It has no code; its test reads every
// package's imports (go/parser, build tags and all) and fails on an import
// that breaks a rule, naming the file, the import and the rule.
//
// The floors, from the ground up:
//
//   - internal/ (the worker pool) and the neutral ground of transforms/:
//     nd (arrays), gemm (the float32 product), wire (the encoding),
//     step/files (reading files): no family, no runtime, no Beam.
//   - runtime/: everything that is not a step (backend selection, the
//     executor, launching, right fitting, Dataflow and GKE); it imports
//     nothing from transforms/, stubs/ or pipelines/. Its device API,
//     runtime/executor/gpu, is what the steps' launches are written
//     against.
//   - transforms/step: the step framework, without Beam; stepbeam runs
//     steps in Beam.
//   - the step families (transforms/raster, transforms/tensor,
//     transforms/onnx): no Beam except in their Beam package (rasterbeam,
//     tensorbeam), and no other family. transforms/onnx is the ONNX runtime
//     alone: nothing of the step framework and nothing of runtime/ but the
//     device API; its step is transforms/onnx/onnxstep.
//   - transforms/batch and transforms/inference (Beam transforms over the
//     families), stubs/ (the stand-ins).
//   - pipelines/: the pipeline harness (pipelines/job) and the pipelines.
package layers
