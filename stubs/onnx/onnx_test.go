package onnx_test

import (
	"testing"

	stub "github.com/beamgpu/beamgpu/stubs/onnx"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The stand-in's outputs have the shapes the model infers for the inputs
// given (the batch size), the declared types (float16 kept), and zeros;
// inputs the model refuses are the CPU's errors.
func TestStubShapes(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(17,
		[]*onnxpb.NodeProto{
			onnxtest.Node("Gemm", []string{"x", "w"}, []string{"y"}, onnxtest.Int("transB", 1)),
			onnxtest.Node("Identity", []string{"h"}, []string{"ho"}),
		},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 3), onnxtest.Value("h", nd.Float16, -1)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 2), onnxtest.Value("ho", nd.Float16, -1)},
		onnxtest.Init("w", nd.Of([]float32{1, 2, 3, 4, 5, 6}, 2, 3))))
	require.NoError(t, err)
	in := onnxstep.Input{Model: m, Inputs: []nd.Array{nd.Of([]float32{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5}, 5, 3), nd.Zeros(nd.Float32, 5)}}
	out, err := stub.Run(in)
	require.NoError(t, err)
	require.Len(t, out.Outputs, 2)
	assert.Equal(t, "float32[5x2]", out.Outputs[0].String())
	assert.Equal(t, "float16[5]", out.Outputs[1].String())
	assert.Equal(t, make([]float32, 10), nd.MustAs[float32](out.Outputs[0]))
	cpu, err := onnxstep.Run(in)
	require.NoError(t, err)
	assert.Equal(t, cpu.Outputs[0].Shape, out.Outputs[0].Shape)
	assert.Equal(t, cpu.Outputs[1].Type, out.Outputs[1].Type)

	in.Inputs[0] = nd.Zeros(nd.Float32, 5, 4)
	_, err = stub.Run(in)
	_, cpuErr := onnxstep.Run(in)
	require.Error(t, err)
	assert.EqualError(t, err, cpuErr.Error())
	_, err = stub.Run(onnxstep.Input{})
	assert.EqualError(t, err, "onnx: no model")
}

// A model whose outputs' shapes depend on its inputs' contents has no
// shapes for the stand-in to give: it fails naming the node.
func TestStubDataShaped(t *testing.T) {
	nz := onnxtest.Node("NonZero", []string{"x"}, []string{"y"})
	name := "nz"
	nz.Name = &name
	m, err := onnxtest.Load(onnxtest.Model(13, []*onnxpb.NodeProto{nz},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, 4)},
		[]*onnxpb.ValueInfoProto{onnxtest.ValueNoShape("y", nd.Int64)}))
	require.NoError(t, err)
	_, err = stub.Run(onnxstep.Input{Model: m, Inputs: []nd.Array{nd.Zeros(nd.Float32, 4)}})
	assert.ErrorContains(t, err, `the stand-in cannot give this model's outputs: the outputs' shapes depend on the data: node "nz" (NonZero, opset 13)`)
}
