package stepbeam_test

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// A step applied to a PCollection of its input type: its DoFn is
// registered once, from an init function (stepbeam.Register(stepScale)),
// and Apply runs the implementation the selector chose on every element.
// The outputs go on; a failed or panicking element goes to the dead-letter
// output as a step.Failure naming it; the step's metrics count both.
func Example() {
	sel := backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(stepScale)})
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, []vec{{Name: "a", X: []float32{1, 2}}, {Name: "b", X: []float32{3}}, {Name: "bad"}})
	out, failed := stepbeam.Apply(s, stepScale, in, step.Using(sel))
	passert.EqualsList(s, beam.ParDo(s, sum, out), []float64{6, 6})
	passert.EqualsList(s, beam.ParDo(s, name, failed), []string{"bad: bad vector"})

	res, err := ptest.RunWithMetrics(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if c.Namespace() == stepbeam.Namespace && (c.Name() == "sb_scale.batches" || c.Name() == "sb_scale.failures") {
			fmt.Println(c.Name(), c.Result())
		}
	}
	// Unordered output:
	// sb_scale.batches 3
	// sb_scale.failures 1
}

// A step whose parameters do not travel with each element binds them with
// a Binder: a serializable value whose Bind turns an element into the
// step's input (its DoFn is registered with stepbeam.RegisterBound[offset]).
func ExampleApplyBound() {
	sel := backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(stepScale)})
	p, s := beam.NewPipelineWithRoot()
	out, _ := stepbeam.ApplyBound(s, stepScale, beam.Create(s, 1.0, 2.0), offset{V: 10}, step.Using(sel))
	passert.EqualsList(s, beam.ParDo(s, sum, out), []float64{22, 24})
	if err := ptest.Run(p); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}
