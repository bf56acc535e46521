package inference

import (
	"fmt"
	"math"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	_ "github.com/beamgpu/beamgpu/transforms/tensor/tensorbeam" // the coder of tensor.Batch
)

// The input and outputs of the MLP and KNN handlers.
const (
	// RowInput is their one input: a float32 row of any shape with as
	// many elements as the model's width (784 for 28x28 images).
	RowInput = "x"
	// OutputClass is each row's class: an int32 scalar (the MLP's argmax,
	// the kNN's vote with its tie rules).
	OutputClass = "class"
	// OutputProbabilities is the MLP's class probabilities (softmax):
	// float32[classes].
	OutputProbabilities = "probabilities"
	// OutputVotes is the kNN's vote shares: float32[classes].
	OutputVotes = "votes"
	// CarryLabel is the label RowExamples carries: an int32 scalar, -1
	// for unknown.
	CarryLabel = "label"
)

// StepRows is the step of RowExamples' failures.
const StepRows = "rows"

func init() {
	register.DoFn3x0[tensor.Batch, func(Example), func(step.Failure)](&rowExamplesFn{})
	register.Emitter1[Example]()
}

// RowExamples turns each row of batches (a PCollection of tensor.Batch)
// into an Example of one input called input, shaped shape (none: the row,
// [Cols]): its Source and Index those of the row (the batch's Source, its
// Offset plus the row), and its label, where the batch has labels, carried
// as CarryLabel. A batch whose rows do not hold shape's elements fails,
// each row a failure. It panics on an empty input name or a shape with a
// dimension below 1.
func RowExamples(s beam.Scope, batches beam.PCollection, input string, shape ...int) (examples, failed beam.PCollection) {
	if input == "" {
		panic("inference.RowExamples: no input name")
	}
	for _, d := range shape {
		if d < 1 {
			panic(fmt.Sprintf("inference.RowExamples: shape %v: want dimensions of 1 or more", shape))
		}
	}
	s = s.Scope("RowExamples")
	return beam.ParDo2(s, &rowExamplesFn{Input: input, Shape: shape}, batches)
}

type rowExamplesFn struct {
	Input string
	Shape []int
}

func (f *rowExamplesFn) ProcessElement(b tensor.Batch, emit func(Example), fail func(step.Failure)) {
	shape := f.Shape
	if len(shape) == 0 {
		shape = []int{b.Cols}
	}
	n, err := nd.Numel(shape)
	if err == nil && n != b.Cols {
		err = fmt.Errorf("%s: rows of %d values, not the %d of shape %s", b.ID(), b.Cols, n, nd.ShapeString(shape))
	}
	if err == nil && len(b.X) != b.Rows*b.Cols {
		err = fmt.Errorf("%s: shape %dx%d needs %d values, X has %d", b.ID(), b.Rows, b.Cols, b.Rows*b.Cols, len(b.X))
	}
	for i := 0; i < b.Rows; i++ {
		index := int64(b.Offset + i)
		if err != nil {
			fail(failure(StepRows, "", b.Source, index, err))
			continue
		}
		e := Example{Source: b.Source, Index: index,
			Inputs: []Tensor{{Name: f.Input, Array: nd.Of(slices.Clone(b.Row(i)), shape...)}}}
		if b.Labels != nil {
			e.Carry = []Tensor{{Name: CarryLabel, Array: nd.Scalar(b.Labels[i])}}
		}
		emit(e)
	}
}

// checkRow checks that e holds one float32 input called RowInput of cols
// elements, all finite (a NaN would fail the rows sharing its batch).
func checkRow(e Example, cols int) error {
	if len(e.Inputs) != 1 || e.Inputs[0].Name != RowInput {
		names := make([]string, len(e.Inputs))
		for i, t := range e.Inputs {
			names[i] = fmt.Sprintf("%q", t.Name)
		}
		return fmt.Errorf("inputs %v given, the model takes one, %q (float32, %d values)", names, RowInput, cols)
	}
	a := e.Inputs[0].Array
	if err := a.Validate(); err != nil {
		return fmt.Errorf("input %q: %w", RowInput, err)
	}
	if a.Type != nd.Float32 {
		return fmt.Errorf("input %q is %v, the model takes float32", RowInput, a.Type)
	}
	if a.Len() != cols {
		return fmt.Errorf("input %q has shape %s (%d values), the model takes %d", RowInput, nd.ShapeString(a.Shape), a.Len(), cols)
	}
	x, err := nd.As[float32](a)
	if err != nil {
		return fmt.Errorf("input %q: %w", RowInput, err)
	}
	for j, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("input %q: element %d is %v", RowInput, j, v)
		}
	}
	return nil
}

// rowsBatch stacks the RowInput of examples (checked by checkRow) into a
// batch of cols columns, named after the first example.
func rowsBatch(ex []Example, cols int) (tensor.Batch, error) {
	b := tensor.Batch{Source: ex[0].ID(), Rows: len(ex), Cols: cols, X: make([]float32, 0, len(ex)*cols)}
	for _, e := range ex {
		x, err := nd.As[float32](e.Inputs[0].Array)
		if err != nil {
			return tensor.Batch{}, fmt.Errorf("%s: %w", e.ID(), err)
		}
		b.X = append(b.X, x...)
	}
	if len(b.X) != len(ex)*cols {
		return tensor.Batch{}, fmt.Errorf("%s: %d values for %d rows of %d", b.Source, len(b.X), len(ex), cols)
	}
	return b, nil
}

// classOutputs are each row's outputs from predictions p: scores (named
// scores) and the class.
func classOutputs(p tensor.Predictions, rows int, scores string) ([][]Tensor, error) {
	if len(p.Predicted) != rows || p.Scores != nil && len(p.Scores) != rows*p.Classes {
		return nil, fmt.Errorf("%s: %d predictions and %d scores for %d rows of %d classes", p.ID(), len(p.Predicted), len(p.Scores), rows, p.Classes)
	}
	out := make([][]Tensor, rows)
	for i := range out {
		sc := make([]float32, p.Classes)
		if p.Scores != nil {
			copy(sc, p.Scores[i*p.Classes:(i+1)*p.Classes])
		}
		out[i] = []Tensor{{Name: scores, Array: nd.Of(sc)}, {Name: OutputClass, Array: nd.Scalar(p.Predicted[i])}}
	}
	return out, nil
}
