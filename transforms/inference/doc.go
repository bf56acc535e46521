// Package inference runs models (users' ONNX files, the MLP) over rows in Beam pipelines.
//
// It works in the manner of Beam Python's RunInference. RunONNX runs an
// ONNX model (the handler from ONNX, which loads and checks the file before
// the pipeline is built) on Examples, named tensors one row each, keyed or
// indexed, and returns a Result per example (its key, index, the model's ID
// and its outputs) and a failure per bad row or failed call; Classify turns
// results into top-k classes, labelled. RunInference runs the MLP handler
// on tensor.Batch rows. A ModelHandler or the ONNX handler loads the model once
// per worker process (shared by every bundle and DoFn instance that uses the
// same model), the input is grouped by the adaptive batching transform
// (transforms/batch) so each call to the model is large enough to amortise
// its fixed cost, and the transform reports RunInference's metrics:
//
//	beamgpu/runinference.num_inferences                    counter: rows predicted
//	beamgpu/runinference.failed_batches_counter            counter: model calls that failed
//	beamgpu/runinference.inference_request_batch_size      distribution: rows per call
//	beamgpu/runinference.inference_request_batch_byte_size distribution: bytes per call
//	beamgpu/runinference.inference_batch_latency_micro_secs distribution: time per call
//	beamgpu/runinference.load_model_latency_milli_secs     distribution: time to load
//	beamgpu/runinference.model_byte_size                   distribution: size of the model
//
// RunONNX also counts runinference.bad_rows: examples refused before the
// model ran. See docs/inference.md for using your own model.
//
// A handler names the registered step its model runs on (the MLP's is
// "mlp", an ONNX model's "onnx", with an explain line per model); the backend selector resolves that step like any other, so the
// same pipeline runs the model on the CPU, the GPU or a stub.
//
// Handlers are registered by kind (Register), like image formats, and carried
// in the pipeline as their kind and an encoded configuration.
package inference
