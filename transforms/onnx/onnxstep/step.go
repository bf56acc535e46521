package onnxstep

// The onnx step: a model and its input arrays in, its output arrays out. On
// the CPU it is Model.Run; on the GPU executor, op onnx.run, with the model
// as side data (sent once per content, kept by the executor) and the
// arrays moved raw (codec.go). Its launch (launch.go) is registered from
// the file behind the cuda tag; its stub is in stubs/onnx; package
// inference runs it in pipelines.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Input is the onnx step's batch: a model and its inputs, in the order of
// Model.Inputs. Where the model is Batched, the rows of every input lie
// along axis 0.
type Input struct {
	Model  *onnx.Model
	Inputs []nd.Array
	// MemoryBudget bounds the memory of a run on the CPU
	// (onnx.RunOptions.MemoryBudget; 0: the default,
	// onnx.DefaultMemoryBudget). It does not cross to the GPU executor,
	// whose host steps have the executor's default.
	MemoryBudget int64
	// Deadline, if not zero, bounds the run in time on the CPU
	// (onnx.RunOptions.Context): past it the run stops before its next
	// step or Loop iteration and fails naming the node
	// (errors.Is(err, context.DeadlineExceeded)). Like MemoryBudget it
	// does not cross to the GPU executor, whose calls have deadlines of
	// their own (derived from their bytes).
	Deadline time.Time
}

// Output is the onnx step's output: the model's outputs, in the order of
// Model.Outputs.
type Output struct {
	Outputs []nd.Array
}

// ID names the batch in a failure: the model and its inputs' shapes, e.g.
// "resnet50.onnx(float32[8x3x224x224])".
func (in Input) ID() string {
	name := "no model"
	if in.Model != nil {
		name = in.Model.Name
	}
	shapes := make([]string, len(in.Inputs))
	for i, a := range in.Inputs {
		shapes[i] = a.String()
	}
	return name + "(" + strings.Join(shapes, ", ") + ")"
}

// Items is the number of rows (the first input's first dimension; 1 for a
// scalar or no input); with Bytes it implements step.Sized.
func (in Input) Items() int { return rows(in.Inputs) }

// Bytes is the size of the inputs' data.
func (in Input) Bytes() int { return bytesOf(in.Inputs) }

// Items is the number of rows of the first output.
func (o Output) Items() int { return rows(o.Outputs) }

// Bytes is the size of the outputs' data.
func (o Output) Bytes() int { return bytesOf(o.Outputs) }

func rows(arrays []nd.Array) int {
	if len(arrays) == 0 || len(arrays[0].Shape) == 0 {
		return 1
	}
	return arrays[0].Shape[0]
}

func bytesOf(arrays []nd.Array) int {
	n := 0
	for _, a := range arrays {
		n += len(a.Data)
	}
	return n
}

// Run is the onnx step's CPU implementation: Model.Run.
func Run(in Input) (Output, error) {
	if in.Model == nil {
		return Output{}, errors.New("onnx: no model")
	}
	opts := onnx.RunOptions{MemoryBudget: in.MemoryBudget}
	if !in.Deadline.IsZero() {
		ctx, cancel := context.WithDeadline(context.Background(), in.Deadline)
		defer cancel()
		opts.Context = ctx
	}
	outs, err := in.Model.RunWith(in.Inputs, opts)
	if err != nil {
		return Output{}, fmt.Errorf("%s: %w", in.Model.Name, err)
	}
	return Output{Outputs: outs}, nil
}

// gpuHints are the onnx step's resource hints on the GPU (the 5xx driver:
// the CUDA 12 worker image needs R525+; see runtime/dataflow's gpu-driver rule).
var gpuHints = backend.Hints{
	Accelerator: "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx",
	MinRAMBytes: 16e9,
}

// StepRun runs an ONNX model: Model.Run on the CPU; on the GPU executor, op
// onnx.run, with the model sent once per content and kept there.
var StepRun = step.Register(step.Def[Input, Output]{
	Name: "onnx",
	Doc:  "run an ONNX model on its input arrays",
	CPU:  Run,
	GPU: &step.GPU[Input, Output]{Op: "onnx.run", Hints: gpuHints,
		In: InputCodec, Out: OutputCodec,
		Side: &step.Side[Input]{
			Of: func(in Input) any {
				if in.Model == nil {
					return nil
				}
				return in.Model
			},
			Encode: func(in Input) (step.Parts, error) { return EncodeModel(in.Model), nil },
			Decode: func(p step.Parts) (any, error) { return DecodeModel(p) },
			With: func(in Input, side any) (Input, error) {
				m, ok := side.(*onnx.Model)
				if !ok {
					return in, errors.New("onnx: no model sent")
				}
				in.Model = m
				return in, nil
			},
		},
		Split: splitInput, Merge: mergeOutputs},
	Sample:    func() Input { return SampleInput(4, 1) },
	Random:    func(seed uint64) Input { return SampleInput(1+int(seed%16), seed) },
	Bench:     benchInput,
	Tolerance: step.Tolerance{Check: compareOutputs},
})

// splitInput halves a batch of a Batched model along its rows.
func splitInput(in Input) (Input, Input, bool) {
	if in.Model == nil || !in.Model.Batched() {
		return in, in, false
	}
	n := -1
	for _, a := range in.Inputs {
		if len(a.Shape) == 0 || n >= 0 && a.Shape[0] != n || a.Validate() != nil {
			return in, in, false
		}
		n = a.Shape[0]
	}
	if n < 2 {
		return in, in, false
	}
	a, b := in, in
	a.Inputs, b.Inputs = make([]nd.Array, len(in.Inputs)), make([]nd.Array, len(in.Inputs))
	for i, x := range in.Inputs {
		a.Inputs[i], b.Inputs[i] = x.Rows(0, n/2), x.Rows(n/2, n)
	}
	return a, b, true
}

// mergeOutputs joins the outputs of two halves along their rows.
func mergeOutputs(a, b Output) (Output, error) {
	if len(a.Outputs) != len(b.Outputs) {
		return Output{}, fmt.Errorf("onnx: merging %d outputs with %d", len(a.Outputs), len(b.Outputs))
	}
	out := Output{Outputs: make([]nd.Array, len(a.Outputs))}
	for i := range a.Outputs {
		c, err := nd.Concat([]nd.Array{a.Outputs[i], b.Outputs[i]})
		if err != nil {
			return Output{}, fmt.Errorf("onnx: merging output %d: %w", i, err)
		}
		out.Outputs[i] = c
	}
	return out, nil
}

// The sample: a tiny model (sample.go builds it) for the contract tests,
// the equivalence tests and the executor's selftest.

var sample struct {
	once sync.Once
	m    *onnx.Model
	err  error
}

// SampleModel returns the step's sample model, parsed once.
func SampleModel() (*onnx.Model, error) {
	sample.once.Do(func() { sample.m, sample.err = onnx.Parse(sampleBytes(), "sample.onnx") })
	return sample.m, sample.err
}

// SampleInput returns the sample model with inputs of rows rows drawn with
// seed (normal floats, small integers). It panics if the sample
// does not load (a build without the operators it uses).
func SampleInput(rows int, seed uint64) Input {
	m, err := SampleModel()
	if err != nil {
		panic(fmt.Sprintf("onnx: the sample model: %v", err))
	}
	return Input{Model: m, Inputs: onnx.RandomInputs(m, rows, seed)}
}

// compareOutputs is the onnx step's tolerance (step.Tolerance.Check):
// onnx.CompareOutputs of the CPU's and the GPU's outputs.
func compareOutputs(_, cpu, gpu any) error {
	c, ok1 := cpu.(Output)
	g, ok2 := gpu.(Output)
	if !ok1 || !ok2 {
		return fmt.Errorf("onnx: comparing a %T with a %T", cpu, gpu)
	}
	return onnx.CompareOutputs(c.Outputs, g.Outputs)
}
