// Package inference runs models (the MLP, kNN, users' ONNX files, models
// of your own) over examples in Beam pipelines.
//
// It works in the manner of Beam Python's RunInference: one transform,
// RunInference, and a handler per kind of model. An Example is one row of
// named tensors (nd.Array), keyed or indexed; a Result, the model's outputs
// by name, with the example's key, source, index and carried arrays and the
// model's ID. The handlers are MLP (a model file of the trainer), KNN (k
// nearest neighbours against a labelled reference set of IDX files) and
// ONNX (an ONNX model file, loaded and checked before the pipeline is
// built); each names the registered step its model runs on (mlp, knn,
// onnx), so --backend, the explain report, stubs, the GPU and its
// fallback to the CPU apply to every model alike.
//
// A handler is carried in the pipeline as its kind (Register) and an
// encoded configuration, and loads its model once per worker process,
// shared by every bundle and DoFn instance that uses the same model. The
// examples are grouped by the adaptive batching transform
// (transforms/batch), so that each call to the model is large enough to
// amortise its fixed cost; a model checks each example first (Model.Check),
// and a bad one fails alone while the rest of its batch runs. A call that
// fails all the same (a Gather index out of range in one row, a panic) is
// retried on each half of its examples, down to single ones, so that only
// the examples that fail alone fail, each with its own reason (a call
// whose GPU cannot be had is not retried: it says nothing of its rows).
// Every failure is a step.Failure of one example, on the dead-letter
// output, so that results plus failures are the examples. RunInference
// reports Beam Python's RunInference metrics, and its retries:
//
//	beamgpu/runinference.num_inferences                    counter: rows predicted
//	beamgpu/runinference.failed_batches_counter            counter: model calls that failed (retries included)
//	beamgpu/runinference.split_retries                     counter: calls on half of a failed call's examples
//	beamgpu/runinference.bad_rows                          counter: examples the model refused (Check)
//	beamgpu/runinference.inference_request_batch_size      distribution: rows per call
//	beamgpu/runinference.inference_request_batch_byte_size distribution: bytes per call
//	beamgpu/runinference.inference_batch_latency_micro_secs distribution: time per call
//	beamgpu/runinference.load_model_latency_milli_secs     distribution: time to load
//	beamgpu/runinference.model_byte_size                   distribution: size of the model
//
// and the metrics of the handler's step (mlp.items, onnx.batches, ...).
//
// Classify turns any model's results into top-k classes, labelled: the
// best scores of a float output, or the classes of an integer one (the
// kNN's vote). RowExamples turns the rows of tensor.Batch (the IDX decoder's
// output) into examples. An ONNX model is loaded (and checked), run and
// classified so:
//
//	h, err := inference.ONNX(ctx, *model, inference.CheckFinite())
//	results, failed, err := inference.TryRunInference(s, examples, h, batch.Params{}, r.Options()...)
//	classes, classFailed, err := inference.Classify(ctx, s, results, h.Model().Outputs[0].Name, *topK, *labels)
//
// examples/classify is a whole program around these lines (job.Main);
// docs/inference.md covers your own model and a handler of your own.
//
// # Sequences: batching by length, padding, and cutting back
//
// Rows of token sequences (a text encoder's input_ids, attention_mask and
// token_type_ids, each int64 [sequence] per row) differ in length, and
// rows of different shapes cannot be stacked into one call. Two pieces
// let them share calls:
//
//   - RunInferenceByLength groups the examples by length instead of by
//     the adaptive batch size (LengthBatching): a window of a bundle's
//     examples is sorted by length and cut into batches of at most
//     MaxBatchSize examples and MaxBatchTokens examples x longest example
//     (one example over the budget is a batch of its own). This is Beam
//     Python's SortAndBatchElements (sort within a bundle, split by
//     max_batch_weight), with a batch's weight the padded tokens it costs.
//     Results come out in batch order; their Index gives the input's.
//   - The ONNX handler with PadRows pads the rows of a call, on every
//     dynamic axis of an input (one the model declares with a symbolic
//     name or none) on which they differ, at the end, to the largest size
//     in the call, with the input's pad value (0 unless given: BERT's
//     padding id, attention mask and token type), and cuts each output
//     back to each row's own size on the output axes that come from a
//     padded axis. An output axis comes from a padded input axis when both
//     carry the same symbolic name (last_hidden_state [batch, sequence,
//     hidden] from input_ids [batch, sequence]: its axis 1 is cut to the
//     row's length; pooler_output [batch, hidden] is not cut). Where that
//     cannot be decided (an output's dynamic axis whose name is no input
//     axis's, or none, or an output without a declared shape),
//     ONNXHandler.Padding says so and rows of different shapes run in
//     calls of their own, one per shape: slower, never wrong. A row whose
//     inputs disagree on a named axis (input_ids of 12, attention_mask of
//     13) fails alone (Check), as padding would hide it. Padding is right
//     only for a model that ignores padded positions (an attention mask);
//     a row longer than the model can take (past its position
//     embeddings) fails alone, by the retry in halves. The counters
//     runinference.tokens and runinference.padded_tokens give padding's
//     share.
//
// They are here, not in transforms/batch (which batches any element and
// knows no model) nor in transforms/onnx (the runtime, which has no Beam
// and no notion of rows and examples), because they need both a model's
// declared inputs and outputs (the symbolic names of its axes) and Beam
// (the batching DoFn); this package is the layer above the families that
// has both. A pipeline feeding tokenized text to an encoder (pipelines/infer
// with a JSONL input; an embedding pipeline) uses them so:
//
//	h, err := inference.ONNX(ctx, model, inference.PadRows(map[string]float64{"input_ids": padID}))
//	results, failed, err := inference.TryRunInferenceByLength(s, examples, h,
//		inference.LengthBatching{MaxBatchSize: 256, MaxBatchTokens: 16384}, r.Options()...)
package inference
