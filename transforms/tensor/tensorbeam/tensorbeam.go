// Package tensorbeam applies the tensor steps in Beam pipelines.
//
// It holds decoding IDX files, standardising, dense layers, softmax,
// argmax and top-k as PTransforms, the Beam coders of the tensor types, and
// the registration of every DoFn they use. The MLP and kNN classifiers run
// through RunInference (transforms/inference: its MLP and KNN handlers).
//
// Each PTransform returns its output and a dead-letter PCollection of
// step.Failure, and resolves its step's implementation (CPU, GPU or stub) at
// construction with the selector of its options (step.Using). The steps
// themselves are package tensor's, which imports no Beam package, so that
// the GPU executor and the trainer link none.
package tensorbeam

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

func init() {
	// Batch and Predictions carry the bulk of a pipeline's bytes: their
	// coders are the steps' codecs (a header, then the arrays raw).
	beam.RegisterCoder(reflect.TypeOf(tensor.Batch{}), tensor.EncodeBatch, tensor.DecodeBatch)
	beam.RegisterCoder(reflect.TypeOf(tensor.Predictions{}), tensor.EncodePredictions, tensor.DecodePredictions)
	for _, t := range []any{tensor.Source{}, tensor.Ranked{}, tensor.Scaler{}, tensor.Dense{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}

	stepbeam.Register(tensor.StepSoftmax)
	stepbeam.Register(tensor.StepArgmax)
	stepbeam.RegisterBound[WithScaler](tensor.StepStandardize)
	stepbeam.RegisterBound[WithLayer](tensor.StepDense)
	stepbeam.RegisterBound[WithK](tensor.StepTopK)

	register.DoFn4x0[context.Context, tensor.Source, func(tensor.Batch), func(step.Failure)](&decodeFn{})
	register.Emitter1[tensor.Batch]()
	register.Emitter1[tensor.Predictions]()
	register.Emitter1[tensor.Ranked]()
}

// Steps are the tensor steps these PTransforms apply (and the knn and mlp
// steps, which RunInference applies), for a pipeline's
// backend.Config.Steps through step.Backends.
var Steps = []step.Any{tensor.StepDecode, tensor.StepStandardize, tensor.StepDense, tensor.StepSoftmax,
	tensor.StepArgmax, tensor.StepTopK, tensor.StepKNN, tensor.StepMLP}

// DecodeIDXFiles reads each Source (IDX images, and labels if named) into
// batches of rows; files that cannot be read and rows with NaN or infinity
// go to failed.
func DecodeIDXFiles(s beam.Scope, sources beam.PCollection, opts ...step.Option) (batches, failed beam.PCollection) {
	s, ex := stepbeam.Scope(s, tensor.StepDecode, opts...)
	return beam.ParDo2(s, &decodeFn{Exec: ex}, sources)
}

type decodeFn struct {
	stepbeam.Exec[tensor.Source, tensor.Decoded]
}

func (f *decodeFn) ProcessElement(ctx context.Context, src tensor.Source, emit func(tensor.Batch), fail func(step.Failure)) {
	out, ok := f.Run(ctx, src, fail)
	if !ok {
		return
	}
	for _, b := range out.Batches {
		emit(b)
	}
	for _, r := range out.Rejected {
		fail(step.Failure{Input: fmt.Sprintf("%s[%d]", r.Source, r.Row), Step: f.Step, Reason: r.Reason, Key: r.Source, Items: 1})
	}
}

// WithScaler binds a scaler to batches: the standardize step's input.
type WithScaler struct{ Scaler tensor.Scaler }

// Bind implements stepbeam.Binder.
func (w WithScaler) Bind(b tensor.Batch) tensor.StandardizeInput {
	return tensor.StandardizeInput{Batch: b, Scaler: w.Scaler}
}

// WithLayer binds a dense layer to batches: the dense step's input.
type WithLayer struct{ Layer tensor.Dense }

// Bind implements stepbeam.Binder.
func (w WithLayer) Bind(b tensor.Batch) tensor.DenseInput {
	return tensor.DenseInput{Batch: b, Layer: w.Layer}
}

// WithK binds k to batches of scores: the topk step's input.
type WithK struct{ K int }

// Bind implements stepbeam.Binder.
func (w WithK) Bind(b tensor.Batch) tensor.TopKInput { return tensor.TopKInput{Batch: b, K: w.K} }

// StandardizeRows scales the columns of every batch with sc.
func StandardizeRows(s beam.Scope, batches beam.PCollection, sc tensor.Scaler, opts ...step.Option) (out, failed beam.PCollection) {
	return stepbeam.ApplyBound(s, tensor.StepStandardize, batches, WithScaler{sc}, opts...)
}

// DenseRows applies a dense layer to every batch. It panics on an invalid
// layer, as Beam's transforms do at construction.
func DenseRows(s beam.Scope, batches beam.PCollection, layer tensor.Dense, opts ...step.Option) (out, failed beam.PCollection) {
	if err := layer.Validate(); err != nil {
		panic(err)
	}
	return stepbeam.ApplyBound(s, tensor.StepDense, batches, WithLayer{layer}, opts...)
}

// SoftmaxRows applies a row-wise softmax to every batch.
func SoftmaxRows(s beam.Scope, batches beam.PCollection, opts ...step.Option) (out, failed beam.PCollection) {
	return stepbeam.Apply(s, tensor.StepSoftmax, batches, opts...)
}

// ArgmaxRows predicts the class of every row (the column of its largest value).
func ArgmaxRows(s beam.Scope, batches beam.PCollection, opts ...step.Option) (preds, failed beam.PCollection) {
	return stepbeam.Apply(s, tensor.StepArgmax, batches, opts...)
}

// TopKRows ranks the k best classes of every row. It panics if k < 1.
func TopKRows(s beam.Scope, batches beam.PCollection, k int, opts ...step.Option) (ranked, failed beam.PCollection) {
	if k <= 0 {
		panic(fmt.Sprintf("tensorbeam.TopKRows: k = %d, want > 0", k))
	}
	return stepbeam.ApplyBound(s, tensor.StepTopK, batches, WithK{k}, opts...)
}
