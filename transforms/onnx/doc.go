// Package onnx loads ONNX models and runs them on the CPU, in pure Go.
//
// Load or Parse reads a model, checks every node against the registered
// operators (RegisterOp; Ops lists them with the opset versions they
// implement) and folds its constants; Model.Run plans the graph once per
// input shape (Model.Plan: shapes inferred, known values computed, the rest
// placed in one workspace) and runs it. A model with an operator outside
// the set is refused at load, naming the operator, its node and the opset.
//
// StepRun is the onnx step (GPU op onnx.run): Model.Run on the CPU, the
// model sent to the GPU executor once per content as side data; its stub
// is in stubs/onnx, and package inference runs it in pipelines (RunONNX).
// The package imports no Beam package, so that the executor links it alone.
package onnx
