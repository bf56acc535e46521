package step_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
)

// fahrenheit converts temperatures from Celsius: the CPU implementation of
// the example's step.
func fahrenheit(c []float64) ([]float64, error) {
	out := make([]float64, len(c))
	for i, x := range c {
		out[i] = x*9/5 + 32
	}
	return out, nil
}

// stepFahrenheit is the example's step, declared once, at package level,
// by its family's package. (A step with a GPU op declares it in GPU, with
// the codecs of its input and output; see examples/clipstep.)
var stepFahrenheit = step.Register(step.Def[[]float64, []float64]{
	Name:   "example_fahrenheit",
	Doc:    "Celsius to Fahrenheit",
	CPU:    fahrenheit,
	Sample: func() []float64 { return []float64{0, 100} },
})

// Its stand-in: the output's shape, zeros. Families register theirs from a
// stubs package.
func init() {
	step.RegisterStub(stepFahrenheit, func(c []float64) ([]float64, error) { return make([]float64, len(c)), nil })
}

// A step declared, its implementation chosen by a backend selector (here
// --backend=auto on a machine without a GPU executor), and run; then its
// stand-in, as --backend=stub runs it.
func Example() {
	sel := backend.MustNew(backend.Config{
		Default:  backend.Auto,
		Executor: backend.NoExecutor{Why: "no GPU executor here"},
		Steps:    step.Backends(stepFahrenheit),
	})
	d, err := step.Resolve(stepFahrenheit, step.Using(sel))
	if err != nil {
		fmt.Println(err)
		return
	}
	run, _ := stepFahrenheit.Impl(d.Impl)
	out, _ := run([]float64{-40, 0, 100})
	fmt.Println(d.Impl, out, "-", d.Reason)

	stub, _ := stepFahrenheit.Impl(backend.Stub)
	out, _ = stub([]float64{-40, 0, 100})
	fmt.Println(backend.Stub, out)
	// Output:
	// cpu [-40 32 212] - auto: step has no GPU implementation
	// stub [0 0 0]
}

// Offload is a step's GPU implementation: the batch crosses to the GPU
// executor (a separate process) and back. Without an executor it fails with
// ErrGPUUnavailable, which under --backend=auto sends the batch to the CPU
// (package stepbeam does); a batch the step rejects fails as on the CPU.
func ExampleStep_Offload() {
	ctx := context.Background()
	step.UseExecutor(filepath.Join(os.TempDir(), "no-such-executor"))
	_, err := stepScale.Offload(ctx, vec{Name: "v", X: []float32{1, 2}})
	fmt.Println("no executor:", errors.Is(err, step.ErrGPUUnavailable))

	steptest.UseExecutor() // this test binary, serving the op with the CPU function
	out, err := stepScale.Offload(ctx, vec{Name: "v", X: []float32{1, 2}})
	fmt.Println("executor:", out.X, err)
	_, err = stepScale.Offload(ctx, vec{Name: "bad"})
	fmt.Println("rejected:", errors.Is(err, step.ErrGPUUnavailable))
	// Output:
	// no executor: true
	// executor: [2 4] <nil>
	// rejected: false
}

// Compare holds a GPU output to the CPU's within the step's tolerance.
func ExampleCompare() {
	cpu := []float32{1, 2, 3}
	gpu := []float32{1, 2.00001, 3.1}
	fmt.Println(step.Compare(cpu, gpu, step.Tolerance{Rel: 1e-4}))
	fmt.Println(step.Compare(cpu, gpu, step.Tolerance{Norm: 0.05}))
	// Output:
	// out[2]: CPU 3, GPU 3.0999999046325684 (relative error 0.0323 > 0.0001)
	// <nil>
}
