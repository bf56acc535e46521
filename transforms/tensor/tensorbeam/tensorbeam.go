// Package tensorbeam applies the tensor steps in Beam pipelines.
//
// It holds decoding IDX files, standardising, dense layers, softmax,
// argmax, top-k and kNN classification as PTransforms, the Beam coders of
// the tensor types, and the registration of every DoFn they use.
//
// Each PTransform returns its output and a dead-letter PCollection of
// step.Failure, and resolves its step's implementation (CPU, GPU or stub) at
// construction with the selector of its options (step.Using). The steps
// themselves are package tensor's, which imports no Beam package, so that
// the GPU executor and the trainer link none.
package tensorbeam

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"reflect"
	"sync"

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
	register.DoFn5x1[context.Context, tensor.Batch, func(*tensor.Batch) bool, func(tensor.Predictions), func(step.Failure), error](&knnFn{})
	register.Emitter1[tensor.Batch]()
	register.Emitter1[tensor.Predictions]()
	register.Emitter1[tensor.Ranked]()
	register.Iter1[tensor.Batch]()
}

// Steps are the tensor steps these PTransforms apply (and the mlp step,
// which RunInference applies), for a pipeline's backend.Config.Steps
// through step.Backends.
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

// KNNParams configures KNNClassify.
type KNNParams struct {
	K       int    // neighbours; default 5
	Weights string // tensor.WeightUniform (default) or tensor.WeightDistance
	Classes int    // number of classes; default 10
}

// WithDefaults fills the defaults and checks p.
func (p KNNParams) WithDefaults() (KNNParams, error) {
	if p.K == 0 {
		p.K = 5
	}
	if p.Weights == "" {
		p.Weights = tensor.WeightUniform
	}
	if p.Classes == 0 {
		p.Classes = 10
	}
	if p.K < 0 || p.Classes < 1 || (p.Weights != tensor.WeightUniform && p.Weights != tensor.WeightDistance) {
		return p, fmt.Errorf("knn: k=%d classes=%d weights=%q: want k > 0, classes > 0, weights %q or %q",
			p.K, p.Classes, p.Weights, tensor.WeightUniform, tensor.WeightDistance)
	}
	return p, nil
}

// KNNClassify classifies every row of queries by its k nearest rows of
// reference (a PCollection of labelled tensor.Batch in the global window,
// delivered as a side input). The reference set is built once per worker
// process, and on the GPU encoded, hashed and sent to the executor once,
// which keeps it on the device.
func KNNClassify(s beam.Scope, queries, reference beam.PCollection, p KNNParams, opts ...step.Option) (preds, failed beam.PCollection) {
	p, err := p.WithDefaults()
	if err != nil {
		panic(err)
	}
	s, ex := stepbeam.Scope(s, tensor.StepKNN, opts...)
	var id [8]byte
	_, _ = rand.Read(id[:])
	fn := &knnFn{Exec: ex, K: p.K, Weights: p.Weights, Classes: p.Classes, RefID: hex.EncodeToString(id[:])}
	return beam.ParDo2(s, fn, queries, beam.SideInput{Input: reference})
}

type knnFn struct {
	stepbeam.Exec[tensor.KNNInput, tensor.Predictions]
	K       int
	Weights string
	Classes int
	// RefID names this application of the step: the DoFn instances of a
	// process with the same RefID share one reference set (references).
	RefID string

	ref *reference
}

// references are the reference sets of the process, by RefID: the side
// input is the same for every DoFn instance of one application of the step
// (the global window), so the first instance builds it and the others wait
// for it and share it, instead of each building its own copy (188 MB for
// Fashion-MNIST's training set).
var references sync.Map // RefID -> *reference

type reference struct {
	once sync.Once
	ref  *tensor.Reference
	err  error
}

// ProcessElement classifies q. A reference set that cannot be built (empty,
// bad labels, fewer rows than k) fails the bundle, once, with the reason:
// no query could be classified against it.
func (f *knnFn) ProcessElement(ctx context.Context, q tensor.Batch, refs func(*tensor.Batch) bool, emit func(tensor.Predictions), fail func(step.Failure)) error {
	if f.ref == nil {
		v, _ := references.LoadOrStore(f.RefID, &reference{})
		f.ref = v.(*reference)
		f.ref.once.Do(func() { f.ref.ref, f.ref.err = buildReference(refs, f.Classes, f.K) })
	}
	if f.ref.err != nil {
		return f.ref.err
	}
	in := tensor.KNNInput{Query: q, Ref: f.ref.ref, K: f.K, Weights: f.Weights}
	if out, ok := f.Run(ctx, in, fail); ok {
		emit(out)
	}
	return nil
}

// buildReference concatenates the side input's batches (in row order of
// their sources and offsets) into one Reference.
func buildReference(refs func(*tensor.Batch) bool, classes, k int) (*tensor.Reference, error) {
	var parts []tensor.Batch
	var b tensor.Batch
	for refs(&b) {
		parts = append(parts, b)
		b = tensor.Batch{}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("knn: the reference set is empty")
	}
	tensor.SortBatches(parts)
	all, err := tensor.Concat(parts)
	if err != nil {
		return nil, fmt.Errorf("knn: reference set: %w", err)
	}
	if k > all.Rows {
		return nil, fmt.Errorf("knn: k=%d is more than the %d rows of the reference set: want k <= %d", k, all.Rows, all.Rows)
	}
	return tensor.NewReference(all, classes)
}
