package tensor

// The tensor steps: each step's declaration (CPU function, GPU op with its
// codecs, sample and random inputs), and the input types of the steps that
// take parameters. The CPU code is in the files of each algorithm, the
// launches in launch_cuda.go, the stubs in github.com/beamgpu/beamgpu/stubs/tensor,
// and the Beam side (DoFns, PTransforms) in package tensorbeam.

import (
	"fmt"
	"math/rand/v2"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// gpuHints are the resource hints of the tensor GPU steps (the 5xx driver:
// the CUDA 12 worker image needs R525+; see runtime/dataflow's gpu-driver rule).
var gpuHints = backend.Hints{
	Accelerator: "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx",
	MinRAMBytes: 16e9,
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

// The steps.

// StepDecode decodes IDX image (and label) files into batches of rows; rows
// with NaN or infinity are rejected one by one.
var StepDecode = step.Register(step.Def[Source, Decoded]{
	Name: "decode",
	Doc:  "decode IDX image (and label) files, gzip or not, into batches of rows; reject rows with NaN or infinity",
	CPU:  DecodeSource,
	Sample: func() Source {
		return Source{Images: SampleImagesPath(), Labels: SampleLabelsPath(), BatchRows: 4096}
	},
})

// StepStandardize scales the columns of a batch.
var StepStandardize = step.Register(step.Def[StandardizeInput, Batch]{
	Name: "standardize",
	Doc:  "scale columns: x/255 (unit) or (x-mean)/std (zscore)",
	CPU:  StandardizeBatch,
	GPU: &step.GPU[StandardizeInput, Batch]{Op: "tensor.standardize", Hints: gpuHints,
		In: batchWith("standardize input", func(in StandardizeInput) Batch { return in.Batch },
			func(h []byte, in StandardizeInput) []byte {
				h = wire.AppendString(h, in.Scaler.Mode)
				h = wire.AppendPlane(wire.AppendUvarint(h, len(in.Scaler.Mean)), in.Scaler.Mean)
				return wire.AppendPlane(wire.AppendUvarint(h, len(in.Scaler.Std)), in.Scaler.Std)
			},
			func(d *wire.Decoder, b Batch) StandardizeInput {
				sc := Scaler{Mode: d.String()}
				if n := d.Uvarint(); n > 0 {
					sc.Mean = wire.Plane[float32](d, n)
				}
				if n := d.Uvarint(); n > 0 {
					sc.Std = wire.Plane[float32](d, n)
				}
				return StandardizeInput{Batch: b, Scaler: sc}
			}),
		Out:   BatchCodec,
		Split: splitOn(func(in *StandardizeInput) *Batch { return &in.Batch }),
		Merge: mergeBatches},
	Sample: func() StandardizeInput {
		return StandardizeInput{Batch: sampleBatch(8, 16), Scaler: Scaler{Mode: ScaleUnit}}
	},
	Random: func(seed uint64) StandardizeInput {
		b := randomBatch(seed, 33)
		if seed%2 == 0 {
			return StandardizeInput{Batch: b, Scaler: FitScaler(b)}
		}
		return StandardizeInput{Batch: b, Scaler: Scaler{Mode: ScaleUnit}}
	},
})

// StepDense applies a dense layer to a batch; the layer's weights are side
// data, sent to the executor once.
var StepDense = step.Register(step.Def[DenseInput, Batch]{
	Name: "dense",
	Doc:  "dense layer: rows x W + b, optionally ReLU",
	CPU:  DenseBatch,
	GPU: &step.GPU[DenseInput, Batch]{Op: "tensor.dense", Hints: gpuHints,
		In:  batchWith("dense input", func(in DenseInput) Batch { return in.Batch }, noParams[DenseInput], onlyBatch(func(b Batch) DenseInput { return DenseInput{Batch: b} })),
		Out: BatchCodec,
		Side: &step.Side[DenseInput]{
			Of: func(in DenseInput) any {
				if len(in.Layer.W) == 0 {
					return nil
				}
				return &in.Layer.W[0] // the layer's weights, shared by every batch of a DoFn
			},
			Encode: func(in DenseInput) (step.Parts, error) { return encodeLayers([]Dense{in.Layer}), nil },
			Decode: func(p step.Parts) (any, error) {
				l, err := decodeLayers(p, "dense layer")
				if err != nil {
					return nil, err
				}
				if len(l) != 1 {
					return nil, fmt.Errorf("dense layer: %d layers sent", len(l))
				}
				return l[0], nil
			},
			With: func(in DenseInput, side any) (DenseInput, error) {
				l, ok := side.(Dense)
				if !ok {
					return in, errNoSide
				}
				in.Layer = l
				return in, nil
			},
		},
		Split: splitOn(func(in *DenseInput) *Batch { return &in.Batch }),
		Merge: mergeBatches},
	Sample: func() DenseInput { return DenseInput{Batch: sampleBatch(8, 16), Layer: sampleMLP().Layers[0]} },
	Bench: func(full bool) (DenseInput, step.Work) {
		rows := benchRows(full, 8192, 1024)
		l := randomMLP(1, 784, 256).Layers[0]
		l.ReLU = true
		return DenseInput{Batch: unitRows(2, rows, 784), Layer: l},
			step.Work{Name: fmt.Sprintf("%dx784 -> 256, ReLU", rows), FLOPs: 2 * float64(rows) * 784 * 256}
	},
	Random: func(seed uint64) DenseInput {
		l := randomMLP(seed, 50, 20).Layers[0]
		l.ReLU = seed%2 == 0
		return DenseInput{Batch: randomBatch(seed, 50), Layer: l}
	},
	Tolerance: step.Tolerance{Norm: 1e-4},
})

// batchOnly is the GPU op of the steps from a batch (no parameters).
func batchOnly[Out any](op string, out step.Codec[Out], merge func(a, b Out) (Out, error)) *step.GPU[Batch, Out] {
	return &step.GPU[Batch, Out]{Op: op, Hints: gpuHints, In: BatchCodec, Out: out, Split: splitBatch, Merge: merge}
}

// StepSoftmax applies a row-wise softmax.
var StepSoftmax = step.Register(step.Def[Batch, Batch]{
	Name:   "softmax",
	Doc:    "row-wise softmax",
	CPU:    Softmax,
	GPU:    batchOnly("tensor.softmax", BatchCodec, mergeBatches),
	Sample: func() Batch { return sampleBatch(8, 10) },
	Random: func(seed uint64) Batch { return randomBatch(seed, 10) },
})

// StepArgmax predicts the class of each row (the column of its largest value).
var StepArgmax = step.Register(step.Def[Batch, Predictions]{
	Name:   "argmax",
	Doc:    "predicted class of each row (ties: lowest class)",
	CPU:    ArgmaxBatch,
	GPU:    batchOnly("tensor.argmax", PredictionsCodec, mergePredictions),
	Sample: func() Batch { return sampleBatch(8, 10) },
	Random: func(seed uint64) Batch { return randomBatch(seed, 10) },
})

// RankedCodec moves the topk step's output: the ranks of all rows as one
// array.
var RankedCodec = step.Codec[Ranked]{
	Encode: func(r Ranked) (step.Parts, error) {
		k := 0
		if len(r.Top) > 0 {
			k = len(r.Top[0])
		}
		flat := make([]int32, 0, len(r.Top)*k)
		for _, row := range r.Top {
			if len(row) != k {
				return step.Parts{}, fmt.Errorf("topk output: rows of %d and %d classes", k, len(row))
			}
			flat = append(flat, row...)
		}
		h := wire.AppendString(nil, r.Source)
		h = wire.AppendUvarint(h, r.Offset)
		h = wire.AppendUvarint(h, len(r.Top))
		h = wire.AppendUvarint(h, k)
		return step.Parts{Header: h, Arrays: [][]byte{wire.Array(flat)}}, nil
	},
	Decode: func(p step.Parts) (Ranked, error) {
		d := wire.NewDecoder(p.Header, "topk output")
		r := Ranked{Source: d.String(), Offset: d.Uvarint()}
		rows, k := d.Uvarint(), d.Uvarint()
		if d.Err() == nil && (len(p.Arrays) != 1 || k > 0 && rows > maxValues/k) {
			d.Fail("%d rows of %d in %d arrays", rows, k, len(p.Arrays))
		}
		if err := d.Done(); err != nil {
			return Ranked{}, err
		}
		flat, err := wire.View[int32](p.Arrays[0], rows*k, "topk output")
		if err != nil {
			return Ranked{}, err
		}
		for i := range rows {
			r.Top = append(r.Top, flat[i*k:(i+1)*k:(i+1)*k])
		}
		return r, nil
	},
}

// StepTopK ranks the k best classes of each row.
var StepTopK = step.Register(step.Def[TopKInput, Ranked]{
	Name: "topk",
	Doc:  "the k best classes of each row",
	CPU:  TopKBatch,
	GPU: &step.GPU[TopKInput, Ranked]{Op: "tensor.topk", Hints: gpuHints,
		In: batchWith("topk input", func(in TopKInput) Batch { return in.Batch },
			func(h []byte, in TopKInput) []byte { return wire.AppendUvarint(h, in.K) },
			func(d *wire.Decoder, b Batch) TopKInput { return TopKInput{Batch: b, K: d.Uvarint()} }),
		Out: RankedCodec},
	Sample: func() TopKInput { return TopKInput{Batch: sampleBatch(8, 10), K: 3} },
	Random: func(seed uint64) TopKInput { return TopKInput{Batch: randomBatch(seed, 10), K: 1 + int(seed%10)} },
})

// StepKNN classifies each row of a batch by its k nearest rows of a
// reference set, which is side data: sent to the executor once, kept on the
// device.
var StepKNN = step.Register(step.Def[KNNInput, Predictions]{
	Name: "knn",
	Doc:  "brute-force k-nearest-neighbours classification against a reference set",
	CPU:  KNNBatch,
	GPU: &step.GPU[KNNInput, Predictions]{Op: "tensor.knn", Hints: gpuHints,
		In: batchWith("knn input", func(in KNNInput) Batch { return in.Query },
			func(h []byte, in KNNInput) []byte { return wire.AppendString(wire.AppendUvarint(h, in.K), in.Weights) },
			func(d *wire.Decoder, b Batch) KNNInput {
				return KNNInput{Query: b, K: d.Uvarint(), Weights: d.String()}
			}),
		Out: PredictionsCodec,
		Side: &step.Side[KNNInput]{
			Of: func(in KNNInput) any {
				if in.Ref == nil {
					return nil
				}
				return in.Ref
			},
			Encode: func(in KNNInput) (step.Parts, error) {
				r := in.Ref
				h, a, err := appendBatchHeader(nil, Batch{Source: "reference", Rows: r.Rows, Cols: r.Cols, X: r.X, Labels: r.Labels})
				return step.Parts{Header: wire.AppendUvarint(h, r.Classes), Arrays: a}, err
			},
			Decode: func(p step.Parts) (any, error) {
				d := wire.NewDecoder(p.Header, "knn reference")
				b, left := readBatch(d, p.Arrays, "knn reference")
				classes := d.Uvarint()
				if err := done(d, left); err != nil {
					return nil, err
				}
				return NewReference(b, classes)
			},
			With: func(in KNNInput, side any) (KNNInput, error) {
				r, ok := side.(*Reference)
				if !ok {
					return in, errNoSide
				}
				in.Ref = r
				return in, nil
			},
		},
		Split: splitOn(func(in *KNNInput) *Batch { return &in.Query }),
		Merge: mergePredictions},
	Sample: func() KNNInput {
		ref, _ := NewReference(sampleBatch(64, 16), 10)
		return KNNInput{Query: sampleBatch(8, 16), Ref: ref, K: 5, Weights: WeightUniform}
	},
	Bench: func(full bool) (KNNInput, step.Work) {
		q, r := benchRows(full, 10000, 500), benchRows(full, 60000, 6000)
		ref, _ := NewReference(unitRows(4, r, 784), 10)
		return KNNInput{Query: unitRows(5, q, 784), Ref: ref, K: 5, Weights: WeightUniform},
			step.Work{Name: fmt.Sprintf("%d vs %dx784, k=5", q, r), FLOPs: 2 * float64(q) * float64(r) * 784}
	},
	Random: func(seed uint64) KNNInput {
		ref, _ := NewReference(randomRows(seed+1000, 200, 24), 10)
		w := WeightUniform
		if seed%2 == 0 {
			w = WeightDistance
		}
		return KNNInput{Query: randomBatch(seed, 24), Ref: ref, K: 1 + int(seed%7), Weights: w}
	},
	// Predictions and vote shares must agree, except at a near tie of the
	// k-th and (k+1)-th distances (KNNNearTie).
	Tolerance: step.Tolerance{Check: KNNNearTie},
})

// StepMLP runs a multi-layer perceptron's forward pass, softmax and argmax;
// the model is side data, sent to the executor once.
var StepMLP = step.Register(step.Def[MLPInput, Predictions]{
	Name: "mlp",
	Doc:  "multi-layer perceptron forward pass, softmax and argmax",
	CPU:  MLPBatch,
	GPU: &step.GPU[MLPInput, Predictions]{Op: "tensor.mlp", Hints: gpuHints,
		In:  batchWith("mlp input", func(in MLPInput) Batch { return in.Batch }, noParams[MLPInput], onlyBatch(func(b Batch) MLPInput { return MLPInput{Batch: b} })),
		Out: PredictionsCodec,
		Side: &step.Side[MLPInput]{
			Of: func(in MLPInput) any {
				if in.Model == nil {
					return nil
				}
				return in.Model
			},
			Encode: func(in MLPInput) (step.Parts, error) {
				if err := in.Model.Validate(); err != nil {
					return step.Parts{}, err
				}
				return encodeLayers(in.Model.Layers), nil
			},
			Decode: func(p step.Parts) (any, error) {
				layers, err := decodeLayers(p, "model sent to the executor")
				if err != nil {
					return nil, err
				}
				m := &MLP{Layers: layers, name: "model sent to the executor"}
				return m, m.Validate()
			},
			With: func(in MLPInput, side any) (MLPInput, error) {
				m, ok := side.(*MLP)
				if !ok {
					return in, errNoSide
				}
				in.Model = m
				return in, nil
			},
		},
		Split: splitOn(func(in *MLPInput) *Batch { return &in.Batch }),
		Merge: mergePredictions},
	Sample: func() MLPInput { return MLPInput{Batch: sampleBatch(8, 16), Model: sampleMLP()} },
	Bench: func(full bool) (MLPInput, step.Work) {
		rows := benchRows(full, 10000, 2000)
		return MLPInput{Batch: unitRows(3, rows, 784), Model: randomMLP(3, 784, 256, 128, 10)},
			step.Work{Name: fmt.Sprintf("%d rows, 784-256-128-10", rows), FLOPs: 2 * float64(rows) * (784*256 + 256*128 + 128*10)}
	},
	Random: func(seed uint64) MLPInput {
		return MLPInput{Batch: randomBatch(seed, 30), Model: randomMLP(seed, 30, 16, 10)}
	},
	Tolerance: step.Tolerance{Norm: 1e-4},
})

func noParams[In any](h []byte, _ In) []byte { return h }

func benchRows(full bool, fullRows, ciRows int) int {
	if full {
		return fullRows
	}
	return ciRows
}

// unitRows is rows x cols uniform values in [0, 1) (as scaled pixels),
// labelled 0 to 9, drawn with seed.
func unitRows(seed uint64, rows, cols int) Batch {
	r := rand.New(rand.NewPCG(seed, 11))
	b := Batch{Source: fmt.Sprintf("bench%d", seed), Rows: rows, Cols: cols, X: make([]float32, rows*cols), Labels: make([]int32, rows)}
	for i := range b.X {
		b.X[i] = r.Float32()
	}
	for i := range b.Labels {
		b.Labels[i] = int32(r.IntN(10))
	}
	return b
}

func onlyBatch[In any](f func(Batch) In) func(*wire.Decoder, Batch) In {
	return func(_ *wire.Decoder, b Batch) In { return f(b) }
}

// Halving batches that do not fit the executor (step.GPU's Split and
// Merge): by rows.

func splitBatch(b Batch) (Batch, Batch, bool) {
	if b.Rows < 2 || b.checkShape() != nil {
		return b, b, false
	}
	h := b.Rows / 2
	return b.Slice(0, h), b.Slice(h, b.Rows), true
}

// splitOn splits an input by the rows of the batch that rows points at,
// keeping the rest of the input (a scaler, a layer, a model) in both halves.
func splitOn[In any](rows func(*In) *Batch) func(In) (In, In, bool) {
	return func(in In) (In, In, bool) {
		a, b, ok := splitBatch(*rows(&in))
		x, y := in, in
		*rows(&x), *rows(&y) = a, b
		return x, y, ok
	}
}

func mergeBatches(a, b Batch) (Batch, error) { return Concat([]Batch{a, b}) }

func mergePredictions(a, b Predictions) (Predictions, error) {
	if a.Classes != b.Classes || a.Source != b.Source || a.Offset+len(a.Predicted) != b.Offset {
		return Predictions{}, fmt.Errorf("merging predictions %s and %s: not consecutive", a.ID(), b.ID())
	}
	out := a
	out.Predicted = append(append([]int32(nil), a.Predicted...), b.Predicted...)
	if a.Labels != nil || b.Labels != nil {
		out.Labels = append(append([]int32(nil), a.Labels...), b.Labels...)
	}
	if a.Scores != nil || b.Scores != nil {
		out.Scores = append(append([]float32(nil), a.Scores...), b.Scores...)
	}
	return out, nil
}
