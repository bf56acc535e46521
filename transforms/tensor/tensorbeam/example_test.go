package tensorbeam_test

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/beamgpu/beamgpu/transforms/tensor/tensorbeam"
)

// classes formats a batch's predicted classes.
func classes(p tensor.Predictions) string { return fmt.Sprint(p.Source, " ", p.Predicted) }

func init() { register.Function1x1(classes) }

// A dense layer and argmax over a batch of two rows, on the CPU: the layer
// (its weights) is bound to the batches (tensorbeam.WithLayer) and travels
// with the DoFn; the explain report says which implementation ran.
func ExampleDenseRows() {
	sel := backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(tensor.StepDense, tensor.StepArgmax)})
	opts := []step.Option{step.Using(sel)}
	// Two inputs, two outputs: the second output is the sum of the inputs.
	layer := tensor.Dense{In: 2, Out: 2, W: []float32{1, 1, 0, 1}, B: []float32{0.5, 0}}
	batch := tensor.Batch{Source: "b", Rows: 2, Cols: 2, X: []float32{1, 0, 1, 1}}

	p, s := beam.NewPipelineWithRoot()
	logits, _ := tensorbeam.DenseRows(s, beam.Create(s, batch), layer, opts...)
	preds, _ := tensorbeam.ArgmaxRows(s, logits, opts...)
	passert.Equals(s, beam.ParDo(s, classes, preds), "b [0 1]")
	if err := ptest.Run(p); err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range sel.Report().Decisions {
		fmt.Println(d.Step, d.Impl)
	}
	// Output:
	// dense cpu
	// argmax cpu
}
