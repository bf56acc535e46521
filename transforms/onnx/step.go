package onnx

// The onnx step: a model and its input arrays in, its output arrays out. On
// the CPU it is Model.Run; on the GPU executor, op onnx.run, with the model
// as side data (sent once per content, kept by the executor) and the
// arrays moved raw (codec.go). Its launch is registered from the files
// behind the cuda tag; its stub is github.com/beamgpu/beamgpu/stubs/onnx;
// its Beam side (RunInference's model handler) is package onnxbeam.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Input is the onnx step's batch: a model and its inputs, in the order of
// Model.Inputs. Where the model is Batched, the rows of every input lie
// along axis 0.
type Input struct {
	Model  *Model
	Inputs []nd.Array
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
	outs, err := in.Model.Run(in.Inputs)
	if err != nil {
		return Output{}, fmt.Errorf("%s: %w", in.Model.Name, err)
	}
	return Output{Outputs: outs}, nil
}

// Batched reports whether the model's first axis is a batch axis of free
// size: every input and output declares a shape of rank 1 or more whose
// first dimension is not a fixed size, with one name where it is named
// ("N", "batch_size"). The rows of such a model's inputs are taken to be
// independent, as exporters mean by a dynamic batch axis: a batch may be
// cut into parts along it and the parts' outputs joined (the GPU executor
// halves a batch it cannot hold; RunInference joins examples into one call).
func (m *Model) Batched() bool {
	name := ""
	for _, vs := range [][]ValueInfo{m.Inputs, m.Outputs} {
		for _, v := range vs {
			if len(v.Shape) == 0 || v.Shape[0].Size >= 0 {
				return false
			}
			if p := v.Shape[0].Param; p != "" {
				if name != "" && p != name {
					return false
				}
				name = p
			}
		}
	}
	return len(m.Inputs) > 0
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
			Encode: func(in Input) (step.Parts, error) { return in.Model.Encode(), nil },
			Decode: func(p step.Parts) (any, error) { return DecodeModel(p) },
			With: func(in Input, side any) (Input, error) {
				m, ok := side.(*Model)
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
	Tolerance: step.Tolerance{Check: CompareOutputs},
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

// NormTolerance bounds the relative error in norm of a float output of
// the GPU implementation against the CPU's (products summed in another
// order); integer and boolean outputs must be equal.
const NormTolerance = 1e-4

// CompareOutputs is the onnx step's tolerance (step.Tolerance.Check): the
// outputs of cpu and gpu (Outputs) have the same types and shapes, every
// float output is within NormTolerance of the CPU's in relative norm, with
// NaN and infinities at the same places, and every other output is equal.
func CompareOutputs(_, cpu, gpu any) error {
	c, ok1 := cpu.(Output)
	g, ok2 := gpu.(Output)
	if !ok1 || !ok2 {
		return fmt.Errorf("onnx: comparing a %T with a %T", cpu, gpu)
	}
	if len(c.Outputs) != len(g.Outputs) {
		return fmt.Errorf("%d outputs on the CPU, %d on the GPU", len(c.Outputs), len(g.Outputs))
	}
	for i := range c.Outputs {
		if err := compareArrays(c.Outputs[i], g.Outputs[i]); err != nil {
			return fmt.Errorf("output %d: %w", i, err)
		}
	}
	return nil
}

func compareArrays(c, g nd.Array) error {
	if c.Type != g.Type || !nd.SameShape(c.Shape, g.Shape) {
		return fmt.Errorf("CPU %v, GPU %v", c, g)
	}
	if err := g.Validate(); err != nil {
		return fmt.Errorf("GPU: %w", err)
	}
	if !c.Type.IsFloat() {
		if string(c.Data) != string(g.Data) {
			cv, _ := nd.Int64s(c)
			gv, _ := nd.Int64s(g)
			for i := range cv {
				if cv[i] != gv[i] {
					return fmt.Errorf("element %d: CPU %d, GPU %d", i, cv[i], gv[i])
				}
			}
			return errors.New("CPU and GPU differ")
		}
		return nil
	}
	cv, gv := nd.Float64s(c), nd.Float64s(g)
	var diff, ref float64
	for i := range cv {
		a, b := cv[i], gv[i]
		switch {
		case math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0):
			if a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
				return fmt.Errorf("element %d: CPU %v, GPU %v", i, a, b)
			}
		default:
			diff += (a - b) * (a - b)
			ref += a * a
		}
	}
	if diff == 0 {
		return nil
	}
	if rel := math.Sqrt(diff / ref); ref == 0 || rel > NormTolerance {
		return fmt.Errorf("relative norm error %.3g > %g", rel, NormTolerance)
	}
	return nil
}

// The sample: a tiny model (sample.go builds it) for the contract tests,
// the equivalence tests and the executor's selftest.

var sample struct {
	once sync.Once
	m    *Model
	err  error
}

// SampleModel returns the step's sample model, parsed once.
func SampleModel() (*Model, error) {
	sample.once.Do(func() { sample.m, sample.err = Parse(sampleBytes(), "sample.onnx") })
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
	return Input{Model: m, Inputs: RandomInputs(m, rows, seed)}
}

// RandomInputs returns inputs for m drawn with seed: declared sizes as
// declared, every free dimension rows (1 where a shape is undeclared);
// floats normal, integers in [0, 4), booleans true three times in four.
func RandomInputs(m *Model, rows int, seed uint64) []nd.Array {
	r := rand.New(rand.NewPCG(seed, 18))
	out := make([]nd.Array, len(m.Inputs))
	for i, v := range m.Inputs {
		shape := []int{rows}
		if v.Shape != nil {
			shape = make([]int, len(v.Shape))
			for d, dim := range v.Shape {
				shape[d] = rows
				if dim.Size >= 0 {
					shape[d] = dim.Size
				}
			}
		}
		t := internal(v.Type)
		a := nd.Zeros(t, shape...)
		if t.IsFloat() {
			f := make([]float64, a.Len())
			for j := range f {
				f[j] = r.NormFloat64()
			}
			nd.ConvertInto(a, nd.Of(f, shape...))
		} else {
			f := make([]int64, a.Len())
			for j := range f {
				f[j] = int64(r.IntN(4))
			}
			nd.ConvertInto(a, nd.Of(f, shape...))
		}
		out[i] = a
	}
	return out
}
