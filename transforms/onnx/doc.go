// Package onnx loads ONNX models and runs them on the CPU, in pure Go, and
// on the GPU executor's device.
//
// Load or Parse reads a model, checks every node against the registered
// operators (RegisterOp; Ops lists them with the opset versions they
// implement), folds its constants and folds each inference-mode
// BatchNormalization that follows a Conv into the Conv's weights and bias
// (graph_fuse.go); Model.Run plans the graph once per
// input shape (Model.Plan: shapes inferred, known values computed, the rest
// placed in one workspace) and runs it. A model with an operator outside
// the set is refused at load, naming the operator, its node and the opset.
//
// On the GPU (Plan.RunDevice, LaunchRun) the same plan runs one node at a
// time as launches of the kernels of kernels.cu and cuBLAS products, each
// operator's launch beside its CPU code (ops_softmax_gpu.go beside
// ops_softmax.go; what the launches share in gpu_util.go), the
// model's weights resident on the device, the intermediate values in one
// device workspace at the plan's offsets, one copy up per input and one
// down per output. A node whose types the kernels do not take (float64,
// integer division...) runs on the host. The tests run the conformance
// suite and the exported models through that path without a GPU: a device
// emulator (runtime/executor/gpu/gpuemu) with the kernels compiled for the
// host (internal/kernelemu).
//
// The package is the runtime alone: it imports no Beam package, nothing of
// the step framework and nothing of the executor but the device API that
// its launches are written against (runtime/executor/gpu). The onnx step,
// the runtime as a beamgpu step with its codecs and its GPU op, is package
// onnxstep; its stub is in stubs/onnx; package inference runs models in
// pipelines.
package onnx
