package tensor

// The Beam side of the tensor steps: each step's registration (CPU function,
// GPU op, sample input), its input type where it takes parameters, its DoFn
// and its PTransform. The CPU code is in the files of each algorithm; the
// stubs are registered by github.com/beamgpu/beamgpu/stubs/tensor.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Step names and GPU ops of the tensor family.
const (
	StepDecode      = "decode"
	StepStandardize = "standardize"
	StepDense       = "dense"
	StepSoftmax     = "softmax"
	StepArgmax      = "argmax"
	StepTopK        = "topk"
	StepKNN         = "knn"
	StepMLP         = "mlp"
)

// gpuHints are the resource hints of the tensor GPU steps (the 5xx driver:
// the CUDA 12 worker image needs R525+; see runtime/dataflow's gpu-driver rule).
var gpuHints = backend.Hints{
	Accelerator: "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx",
	MinRAMBytes: 16e9,
}

func gpuStep(name string) backend.Step {
	return backend.Step{Name: name, GPUOp: "tensor." + name, Hints: gpuHints}
}

// StandardizeInput is the standardize step's batch: rows and the scaler.
type StandardizeInput struct {
	Batch  Batch
	Scaler Scaler
}

// DenseInput is the dense step's batch: rows and the layer.
type DenseInput struct {
	Batch Batch
	Layer Dense
}

// TopKInput is the topk step's batch: scores and k.
type TopKInput struct {
	Batch Batch
	K     int
}

// Ranked is the topk step's output: the k best classes of each row, best first.
type Ranked struct {
	Source string
	Offset int
	Top    [][]int32
}

// KNNInput is the knn step's batch: queries, the reference set, k and the weighting.
type KNNInput struct {
	Query   Batch
	Ref     *Reference
	K       int
	Weights string
}

// MLPInput is the mlp step's batch: rows and the model.
type MLPInput struct {
	Batch Batch
	Model *MLP
}

// Identities and sizes for failures and metrics.
func (in StandardizeInput) ID() string { return in.Batch.ID() }
func (in DenseInput) ID() string       { return in.Batch.ID() }
func (in TopKInput) ID() string        { return in.Batch.ID() }
func (in KNNInput) ID() string         { return in.Query.ID() }
func (in MLPInput) ID() string         { return in.Batch.ID() }
func (in StandardizeInput) Key() string {
	return in.Batch.Source
}
func (in DenseInput) Key() string      { return in.Batch.Source }
func (in TopKInput) Key() string       { return in.Batch.Source }
func (in KNNInput) Key() string        { return in.Query.Source }
func (in MLPInput) Key() string        { return in.Batch.Source }
func (b Batch) Key() string            { return b.Source }
func (in StandardizeInput) Items() int { return in.Batch.Rows }
func (in DenseInput) Items() int       { return in.Batch.Rows }
func (in TopKInput) Items() int        { return in.Batch.Rows }
func (in KNNInput) Items() int         { return in.Query.Rows }
func (in MLPInput) Items() int         { return in.Batch.Rows }
func (in StandardizeInput) Bytes() int { return in.Batch.Bytes() }
func (in DenseInput) Bytes() int       { return in.Batch.Bytes() }
func (in TopKInput) Bytes() int        { return in.Batch.Bytes() }
func (in KNNInput) Bytes() int         { return in.Query.Bytes() }
func (in MLPInput) Bytes() int         { return in.Batch.Bytes() }

// CPU implementations in the step signature func(In) (Out, error).

// StandardizeBatch is the CPU implementation of the standardize step.
func StandardizeBatch(in StandardizeInput) (Batch, error) { return in.Scaler.Apply(in.Batch) }

// DenseBatch is the CPU implementation of the dense step.
func DenseBatch(in DenseInput) (Batch, error) { return in.Layer.Forward(in.Batch) }

// ArgmaxBatch is the CPU implementation of the argmax step.
func ArgmaxBatch(b Batch) (Predictions, error) {
	if err := b.checkShape(); err != nil {
		return Predictions{}, err
	}
	return Argmax(b), nil
}

// TopKBatch is the CPU implementation of the topk step.
func TopKBatch(in TopKInput) (Ranked, error) {
	top, err := TopK(in.Batch, in.K)
	return Ranked{Source: in.Batch.Source, Offset: in.Batch.Offset, Top: top}, err
}

// KNNBatch is the CPU implementation of the knn step.
func KNNBatch(in KNNInput) (Predictions, error) { return KNN(in.Query, in.Ref, in.K, in.Weights) }

// MLPBatch is the CPU implementation of the mlp step: the whole forward pass,
// softmax and argmax.
func MLPBatch(in MLPInput) (Predictions, error) {
	if in.Model == nil {
		return Predictions{}, fmt.Errorf("%s: no model", in.Batch.ID())
	}
	return in.Model.Predict(in.Batch)
}

// randomBatch is a batch of 1 to 40 rows of random values drawn with seed.
func randomBatch(seed uint64, cols int) Batch {
	return randomRows(seed, 1+rand.New(rand.NewPCG(seed, 8)).IntN(40), cols)
}

// randomRows is a batch of rows x cols random values drawn with seed.
func randomRows(seed uint64, rows, cols int) Batch {
	r := rand.New(rand.NewPCG(seed, 7))
	b := Batch{Source: fmt.Sprintf("random%d", seed), Offset: r.IntN(1000), Rows: rows, Cols: cols,
		X: make([]float32, rows*cols), Labels: make([]int32, rows)}
	for i := range b.X {
		b.X[i] = float32(r.NormFloat64())
	}
	for i := range b.Labels {
		b.Labels[i] = int32(r.IntN(10))
	}
	return b
}

func randomMLP(seed uint64, dims ...int) *MLP {
	m, _ := NewMLP(dims...)
	r := rand.New(rand.NewPCG(seed, 9))
	for _, l := range m.Layers {
		for i := range l.W {
			l.W[i] = float32(r.NormFloat64() / 4)
		}
		for i := range l.B {
			l.B[i] = float32(r.NormFloat64() / 10)
		}
	}
	return m
}

// sampleBatch is a deterministic batch of rows x cols values in [0, 1).
func sampleBatch(rows, cols int) Batch {
	r := rand.New(rand.NewPCG(1, 2))
	b := Batch{Source: "sample", Rows: rows, Cols: cols, X: make([]float32, rows*cols), Labels: make([]int32, rows)}
	for i := range b.X {
		b.X[i] = r.Float32()
	}
	for i := range b.Labels {
		b.Labels[i] = int32(i % 10)
	}
	return b
}

func sampleMLP() *MLP {
	m, _ := NewMLP(16, 8, 10)
	r := rand.New(rand.NewPCG(3, 4))
	for _, l := range m.Layers {
		for i := range l.W {
			l.W[i] = float32(r.NormFloat64() * 0.3)
		}
	}
	return m
}

func init() {
	step.Register(step.Def{Step: backend.Step{Name: StepDecode}, CPU: DecodeSource,
		Doc: "decode IDX image (and label) files, gzip or not, into batches of rows; reject rows with NaN or infinity",
		Sample: func() any {
			return Source{Images: SampleImagesPath(), Labels: SampleLabelsPath(), BatchRows: 4096}
		}})
	step.Register(step.Def{Step: gpuStep(StepStandardize), CPU: StandardizeBatch,
		Doc:    "scale columns: x/255 (unit) or (x-mean)/std (zscore)",
		Sample: func() any { return StandardizeInput{Batch: sampleBatch(8, 16), Scaler: Scaler{Mode: ScaleUnit}} },
		Random: func(seed uint64) any {
			b := randomBatch(seed, 33)
			if seed%2 == 0 {
				return StandardizeInput{Batch: b, Scaler: FitScaler(b)}
			}
			return StandardizeInput{Batch: b, Scaler: Scaler{Mode: ScaleUnit}}
		}})
	step.Register(step.Def{Step: gpuStep(StepDense), CPU: DenseBatch,
		Doc: "dense layer: rows x W + b, optionally ReLU",
		Sample: func() any {
			return DenseInput{Batch: sampleBatch(8, 16), Layer: sampleMLP().Layers[0]}
		},
		Random: func(seed uint64) any {
			l := randomMLP(seed, 50, 20).Layers[0]
			l.ReLU = seed%2 == 0
			return DenseInput{Batch: randomBatch(seed, 50), Layer: l}
		},
		Tolerance: step.Tolerance{Norm: 1e-4}})
	step.Register(step.Def{Step: gpuStep(StepSoftmax), CPU: Softmax,
		Doc: "row-wise softmax", Sample: func() any { return sampleBatch(8, 10) },
		Random: func(seed uint64) any { return randomBatch(seed, 10) }})
	step.Register(step.Def{Step: gpuStep(StepArgmax), CPU: ArgmaxBatch,
		Doc: "predicted class of each row (ties: lowest class)", Sample: func() any { return sampleBatch(8, 10) },
		Random: func(seed uint64) any { return randomBatch(seed, 10) }})
	step.Register(step.Def{Step: gpuStep(StepTopK), CPU: TopKBatch,
		Doc: "the k best classes of each row", Sample: func() any { return TopKInput{Batch: sampleBatch(8, 10), K: 3} },
		Random: func(seed uint64) any { return TopKInput{Batch: randomBatch(seed, 10), K: 1 + int(seed%10)} }})
	step.Register(step.Def{Step: gpuStep(StepKNN), CPU: KNNBatch,
		Doc: "brute-force k-nearest-neighbours classification against a reference set",
		Sample: func() any {
			ref, _ := NewReference(sampleBatch(64, 16), 10)
			q := sampleBatch(8, 16)
			return KNNInput{Query: q, Ref: ref, K: 5, Weights: WeightUniform}
		},
		Random: func(seed uint64) any {
			ref, _ := NewReference(randomRows(seed+1000, 200, 24), 10)
			w := WeightUniform
			if seed%2 == 0 {
				w = WeightDistance
			}
			return KNNInput{Query: randomBatch(seed, 24), Ref: ref, K: 1 + int(seed%7), Weights: w}
		},
		// Predictions must be identical; vote shares are sums of the same weights.
		Tolerance: step.Tolerance{Norm: 1e-4}})
	step.Register(step.Def{Step: gpuStep(StepMLP), CPU: MLPBatch,
		Doc:    "multi-layer perceptron forward pass, softmax and argmax",
		Sample: func() any { return MLPInput{Batch: sampleBatch(8, 16), Model: sampleMLP()} },
		Random: func(seed uint64) any {
			return MLPInput{Batch: randomBatch(seed, 30), Model: randomMLP(seed, 30, 16, 10)}
		},
		Tolerance: step.Tolerance{Norm: 1e-4}})

	register.DoFn4x0[context.Context, Source, func(Batch), func(step.Failure)](&decodeFn{})
	register.DoFn4x0[context.Context, Batch, func(Batch), func(step.Failure)](&standardizeFn{})
	register.DoFn4x0[context.Context, Batch, func(Batch), func(step.Failure)](&denseFn{})
	register.DoFn4x0[context.Context, Batch, func(Batch), func(step.Failure)](&softmaxFn{})
	register.DoFn4x0[context.Context, Batch, func(Predictions), func(step.Failure)](&argmaxFn{})
	register.DoFn4x0[context.Context, Batch, func(Ranked), func(step.Failure)](&topKFn{})
	register.DoFn5x0[context.Context, Batch, func(*Batch) bool, func(Predictions), func(step.Failure)](&knnFn{})
	register.Emitter1[Batch]()
	register.Emitter1[Predictions]()
	register.Emitter1[Ranked]()
	register.Emitter1[step.Failure]()
	register.Iter1[Batch]()
	for _, t := range []any{Source{}, Ranked{}, Scaler{}, Dense{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}
}

// DecodeIDXFiles reads each Source (IDX images, and labels if named) into
// batches of rows; files that cannot be read and rows with NaN or infinity
// go to failed.
func DecodeIDXFiles(s beam.Scope, sources beam.PCollection, opts ...step.Option) (batches, failed beam.PCollection) {
	s, ex := step.Scope(s, StepDecode, opts...)
	return beam.ParDo2(s, &decodeFn{Exec: ex}, sources)
}

type decodeFn struct{ step.Exec }

func (f *decodeFn) ProcessElement(ctx context.Context, src Source, emit func(Batch), fail func(step.Failure)) {
	out, ok := step.Run[Source, Decoded](ctx, &f.Exec, src, fail)
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

// StandardizeRows scales the columns of every batch with sc.
func StandardizeRows(s beam.Scope, batches beam.PCollection, sc Scaler, opts ...step.Option) (out, failed beam.PCollection) {
	s, ex := step.Scope(s, StepStandardize, opts...)
	return beam.ParDo2(s, &standardizeFn{Exec: ex, Scaler: sc}, batches)
}

type standardizeFn struct {
	step.Exec
	Scaler Scaler
}

func (f *standardizeFn) ProcessElement(ctx context.Context, b Batch, emit func(Batch), fail func(step.Failure)) {
	if out, ok := step.Run[StandardizeInput, Batch](ctx, &f.Exec, StandardizeInput{Batch: b, Scaler: f.Scaler}, fail); ok {
		emit(out)
	}
}

// DenseRows applies a dense layer to every batch.
func DenseRows(s beam.Scope, batches beam.PCollection, layer Dense, opts ...step.Option) (out, failed beam.PCollection) {
	if err := layer.check(); err != nil {
		panic(err)
	}
	s, ex := step.Scope(s, StepDense, opts...)
	return beam.ParDo2(s, &denseFn{Exec: ex, Layer: layer}, batches)
}

type denseFn struct {
	step.Exec
	Layer Dense
}

func (f *denseFn) ProcessElement(ctx context.Context, b Batch, emit func(Batch), fail func(step.Failure)) {
	if out, ok := step.Run[DenseInput, Batch](ctx, &f.Exec, DenseInput{Batch: b, Layer: f.Layer}, fail); ok {
		emit(out)
	}
}

// SoftmaxRows applies a row-wise softmax to every batch.
func SoftmaxRows(s beam.Scope, batches beam.PCollection, opts ...step.Option) (out, failed beam.PCollection) {
	s, ex := step.Scope(s, StepSoftmax, opts...)
	return beam.ParDo2(s, &softmaxFn{Exec: ex}, batches)
}

type softmaxFn struct{ step.Exec }

func (f *softmaxFn) ProcessElement(ctx context.Context, b Batch, emit func(Batch), fail func(step.Failure)) {
	if out, ok := step.Run[Batch, Batch](ctx, &f.Exec, b, fail); ok {
		emit(out)
	}
}

// ArgmaxRows predicts the class of every row (the column of its largest value).
func ArgmaxRows(s beam.Scope, batches beam.PCollection, opts ...step.Option) (preds, failed beam.PCollection) {
	s, ex := step.Scope(s, StepArgmax, opts...)
	return beam.ParDo2(s, &argmaxFn{Exec: ex}, batches)
}

type argmaxFn struct{ step.Exec }

func (f *argmaxFn) ProcessElement(ctx context.Context, b Batch, emit func(Predictions), fail func(step.Failure)) {
	if out, ok := step.Run[Batch, Predictions](ctx, &f.Exec, b, fail); ok {
		emit(out)
	}
}

// TopKRows ranks the k best classes of every row.
func TopKRows(s beam.Scope, batches beam.PCollection, k int, opts ...step.Option) (ranked, failed beam.PCollection) {
	if k <= 0 {
		panic(fmt.Sprintf("tensor.TopKRows: k = %d, want > 0", k))
	}
	s, ex := step.Scope(s, StepTopK, opts...)
	return beam.ParDo2(s, &topKFn{Exec: ex, K: k}, batches)
}

type topKFn struct {
	step.Exec
	K int
}

func (f *topKFn) ProcessElement(ctx context.Context, b Batch, emit func(Ranked), fail func(step.Failure)) {
	if out, ok := step.Run[TopKInput, Ranked](ctx, &f.Exec, TopKInput{Batch: b, K: f.K}, fail); ok {
		emit(out)
	}
}

// KNNParams configures KNNClassify.
type KNNParams struct {
	K       int    // neighbours; default 5
	Weights string // WeightUniform (default) or WeightDistance
	Classes int    // number of classes; default 10
}

func (p KNNParams) withDefaults() (KNNParams, error) {
	if p.K == 0 {
		p.K = 5
	}
	if p.Weights == "" {
		p.Weights = WeightUniform
	}
	if p.Classes == 0 {
		p.Classes = 10
	}
	if p.K < 0 || p.Classes < 1 || (p.Weights != WeightUniform && p.Weights != WeightDistance) {
		return p, fmt.Errorf("knn: k=%d classes=%d weights=%q: want k > 0, classes > 0, weights %q or %q",
			p.K, p.Classes, p.Weights, WeightUniform, WeightDistance)
	}
	return p, nil
}

// KNNClassify classifies every row of queries by its k nearest rows of
// reference (a PCollection of labelled Batch, delivered as a side input and
// built into one Reference per worker process).
func KNNClassify(s beam.Scope, queries, reference beam.PCollection, p KNNParams, opts ...step.Option) (preds, failed beam.PCollection) {
	p, err := p.withDefaults()
	if err != nil {
		panic(err)
	}
	s, ex := step.Scope(s, StepKNN, opts...)
	fn := &knnFn{Exec: ex, K: p.K, Weights: p.Weights, Classes: p.Classes}
	return beam.ParDo2(s, fn, queries, beam.SideInput{Input: reference})
}

type knnFn struct {
	step.Exec
	K       int
	Weights string
	Classes int

	ref    *Reference
	refErr error
}

func (f *knnFn) ProcessElement(ctx context.Context, q Batch, refs func(*Batch) bool, emit func(Predictions), fail func(step.Failure)) {
	if f.ref == nil && f.refErr == nil {
		f.ref, f.refErr = buildReference(refs, f.Classes)
	}
	if f.refErr != nil {
		fail(step.NewFailure(f.Step, q, f.refErr))
		return
	}
	in := KNNInput{Query: q, Ref: f.ref, K: f.K, Weights: f.Weights}
	if out, ok := step.Run[KNNInput, Predictions](ctx, &f.Exec, in, fail); ok {
		emit(out)
	}
}

// buildReference concatenates the side input's batches (in row order of
// their sources and offsets) into one Reference.
func buildReference(refs func(*Batch) bool, classes int) (*Reference, error) {
	var parts []Batch
	var b Batch
	for refs(&b) {
		parts = append(parts, b)
		b = Batch{}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("knn: the reference set is empty")
	}
	sortBatches(parts)
	all, err := Concat(parts)
	if err != nil {
		return nil, fmt.Errorf("knn: reference set: %w", err)
	}
	return NewReference(all, classes)
}
