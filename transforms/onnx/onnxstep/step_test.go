package onnxstep_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	steptest.MaybeServe() // this test binary is also the tests' GPU executor
	os.Exit(m.Run())
}

// A model crosses to the executor as Model.Encode's parts and comes back,
// by DecodeModel, with its identity and the same outputs.
func TestModelCodec(t *testing.T) {
	in := onnxstep.SampleInput(5, 3)
	p := onnxstep.EncodeModel(in.Model)
	m, err := onnxstep.DecodeModel(p)
	require.NoError(t, err)
	assert.Equal(t, in.Model.ID, m.ID)
	assert.Equal(t, in.Model.Name, m.Name)
	assert.Equal(t, in.Model.Inputs, m.Inputs)
	assert.Equal(t, in.Model.Outputs, m.Outputs)
	want, err := in.Model.Run(in.Inputs)
	require.NoError(t, err)
	got, err := m.Run(in.Inputs)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	p.Arrays = p.Arrays[1:]
	_, err = onnxstep.DecodeModel(p)
	assert.ErrorContains(t, err, "initializers")
}

// Arrays cross as raw parts and are viewed in place.
func TestArrayCodec(t *testing.T) {
	out := onnxstep.Output{Outputs: []nd.Array{nd.Of([]float32{1, 2, 3, 4}, 2, 2), nd.Of([]int64{7}, 1), nd.Of([]bool{true}), nd.Zeros(nd.Uint8, 0, 3)}}
	p, err := onnxstep.OutputCodec.Encode(out)
	require.NoError(t, err)
	got, err := onnxstep.OutputCodec.Decode(p)
	require.NoError(t, err)
	require.Len(t, got.Outputs, 4)
	for i := range out.Outputs {
		assert.Equal(t, out.Outputs[i].Type, got.Outputs[i].Type)
		assert.Equal(t, out.Outputs[i].Shape, got.Outputs[i].Shape)
		assert.Equal(t, len(out.Outputs[i].Data), len(got.Outputs[i].Data))
	}
	p.Header = p.Header[:len(p.Header)-1]
	_, err = onnxstep.OutputCodec.Decode(p)
	assert.Error(t, err)
}

// The onnx step on its sample: the stub contract is checked in package
// stubs; here its batching: a Batched model is cut in halves and joined.
func TestStepBatched(t *testing.T) {
	in := onnxstep.SampleInput(6, 1)
	assert.True(t, in.Model.Batched())
	assert.Equal(t, 6, in.Items())
	out, err := onnxstep.Run(in)
	require.NoError(t, err)
	require.Len(t, out.Outputs, 1)
	assert.Equal(t, []int{6, 4}, out.Outputs[0].Shape)

	fixed, err := onnxtest.Load(onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Identity", []string{"x"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, 2, 3)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, 2, 3)}))
	require.NoError(t, err)
	assert.False(t, fixed.Batched(), "a fixed first dimension is not a batch axis")
	_, err = onnxstep.Run(onnxstep.Input{})
	assert.EqualError(t, err, "onnx: no model")
}

// A Deadline bounds the CPU run: one already past stops the run before
// its first step, with the context's error; a zero one is no bound.
func TestStepDeadline(t *testing.T) {
	in := onnxstep.SampleInput(2, 1)
	in.Deadline = time.Now().Add(-time.Second)
	_, err := onnxstep.Run(in)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	in.Deadline = time.Now().Add(time.Hour)
	_, err = onnxstep.Run(in)
	require.NoError(t, err)
}

// The onnx step's GPU op through a real executor process: the model goes as
// side data, and the outputs equal the CPU's on the sample, on random
// inputs, and on every conformance model the CPU passes. The executor is
// this test binary (serving onnx.run with the CPU code, as the reference
// executor does), or $BEAMGPU_EXECUTOR: make gpu-test names the CUDA build,
// and every conformance model then runs on the GPU.
func TestExecutorServesOnnxRun(t *testing.T) {
	ex := steptest.UseExecutor()
	if path := os.Getenv("BEAMGPU_EXECUTOR"); path != "" {
		ex = step.UseExecutor(path)
	}
	sel := backend.MustNew(backend.Config{Default: backend.GPU, Executor: ex})
	d, err := sel.Resolve(onnxstep.StepRun.Backend())
	require.NoError(t, err)
	require.Equal(t, backend.GPU, d.Impl)
	require.Equal(t, "onnx.run", d.GPUOp)
	check := func(in onnxstep.Input) ([]nd.Array, error) {
		cpu, err := steptest.Apply(onnxstep.StepRun, backend.CPU, in)
		if err != nil {
			return nil, err
		}
		gpu, err := steptest.Apply(onnxstep.StepRun, backend.GPU, in)
		if err != nil {
			return nil, err
		}
		if err := steptest.Equal(in, cpu, gpu, onnxstep.StepRun.Tolerance()); err != nil {
			return nil, err
		}
		return gpu.(onnxstep.Output).Outputs, nil
	}
	for seed := range uint64(4) {
		in, _ := onnxstep.StepRun.RandomInput(seed)
		_, err := check(in.(onnxstep.Input))
		assert.NoError(t, err, "seed %d", seed)
	}

	tests, _ := onnxtest.ConformanceTests(t)
	run, passed := 0, 0
	for _, c := range tests {
		if _, ok := onnxtest.Skips[c.ID()]; ok {
			continue
		}
		if onnxtest.RunConformance(t, c, func(m *onnx.Model, in []nd.Array) ([]nd.Array, error) { return m.Run(in) }) != nil {
			continue // failures on the CPU are TestConformance's
		}
		run++
		err := onnxtest.RunConformance(t, c, func(m *onnx.Model, in []nd.Array) ([]nd.Array, error) {
			return check(onnxstep.Input{Model: m, Inputs: in})
		})
		if assert.NoError(t, err, c.ID()) {
			passed++
		}
	}
	t.Logf("conformance models through the executor: %d of %d equal to the CPU and to the expected outputs", passed, run)
}
