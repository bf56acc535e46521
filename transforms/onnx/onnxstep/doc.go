// Package onnxstep is the onnx step: package onnx's runtime as a beamgpu
// step, with a CPU implementation, a GPU op and a stub.
//
// StepRun takes a model and its input arrays (Input) to its output arrays
// (Output): on the CPU it is onnx.Model.Run; on the GPU executor it is op
// onnx.run, whose launch (LaunchRun, registered from the file behind the
// cuda build tag) runs the model's plan on the device (onnx.Plan.RunDevice).
// The model crosses to the executor as side data, once per content
// (EncodeModel, DecodeModel: its graph as loaded and its weights, raw); a
// batch's arrays cross raw (InputCodec, OutputCodec). Its stub is in
// stubs/onnx, and package inference runs it in pipelines (RunInference with
// the ONNX handler). Load reads a model from a local path or any path
// package files opens (gs:// in a pipeline).
//
// Package onnx itself knows no step, executor or Beam: this package is the
// adapter between the two, as rasterbeam and tensorbeam are for their
// families. It imports no Beam package, so that the executor links it.
package onnxstep
