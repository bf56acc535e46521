package onnx_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

type nodes = []*onnxpb.NodeProto
type values = []*onnxpb.ValueInfoProto

// A chain of views and a constant plans into no workspace, and its outputs
// are the caller's own copies.
func TestIdentityChain(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(17,
		nodes{
			onnxtest.Node("Identity", []string{"x"}, []string{"a"}),
			onnxtest.Node("Identity", []string{"a"}, []string{"y"}),
			onnxtest.Node("Constant", nil, []string{"c"}, onnxtest.Tensor("value", nd.Of([]int64{7, 8}))),
		},
		values{onnxtest.Value("x", nd.Float32, -1, 2)},
		values{onnxtest.Value("y", nd.Float32, -1, 2), onnxtest.Value("c", nd.Int64, 2)}))
	require.NoError(t, err)
	x := nd.Of([]float32{1, 2, 3, 4}, 2, 2)
	out, err := m.Run([]nd.Array{x})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2, 3, 4}, nd.MustAs[float32](out[0]))
	assert.Equal(t, []int64{7, 8}, nd.MustAs[int64](out[1]))
	out[0].Data[0] = 9
	assert.Equal(t, float32(1), nd.MustAs[float32](x)[0], "the output is a copy, not the input")
	p, err := m.Plan([]nd.Array{x})
	require.NoError(t, err)
	assert.Equal(t, 0, p.WorkspaceBytes())
}

// Bad models are refused at load, naming what is wrong.
func TestLoadErrors(t *testing.T) {
	x := values{onnxtest.Value("x", nd.Float32, 2)}
	y := values{onnxtest.Value("y", nd.Float32, 2)}
	for name, tc := range map[string]struct {
		m    *onnxpb.ModelProto
		want string
	}{
		"unknown op": {onnxtest.Model(17, nodes{onnxtest.Node("Frobnicate", []string{"x"}, []string{"y"})}, x, y),
			`operator Frobnicate (node "Frobnicate_[y]", opset 17) is not supported by this runtime`},
		"other domain": {func() *onnxpb.ModelProto {
			m := onnxtest.Model(17, nodes{onnxtest.Node("Identity", []string{"x"}, []string{"y"})}, x, y)
			d := "com.microsoft"
			m.Graph.Node[0].Domain = &d
			return m
		}(), `operator Identity of domain com.microsoft (node "Identity_[y]", a domain the model imports no opset of) is not supported`},
		"cycle": {onnxtest.Model(17, nodes{
			onnxtest.Node("Identity", []string{"b"}, []string{"a"}),
			onnxtest.Node("Identity", []string{"a"}, []string{"b"}),
			onnxtest.Node("Identity", []string{"x"}, []string{"y"}),
		}, x, y), "the graph has a cycle"},
		"undefined input": {onnxtest.Model(17, nodes{onnxtest.Node("Identity", []string{"z"}, []string{"y"})}, x, y),
			`input "z" is not defined`},
		"twice": {onnxtest.Model(17, nodes{
			onnxtest.Node("Identity", []string{"x"}, []string{"y"}),
			onnxtest.Node("Identity", []string{"x"}, []string{"y"}),
		}, x, y), `value "y" is produced twice`},
		"opset": {onnxtest.Model(22, nodes{onnxtest.Node("Identity", []string{"x"}, []string{"y"})}, x, y),
			"opset 22 of the default domain: this runtime implements opsets 1 to 21"},
		"int4 of opset 21": {onnxtest.Model(21, nodes{onnxtest.Node("Cast", []string{"x"}, []string{"y"}, onnxtest.Int("to", 22))}, x, y),
			"attribute to is element type 22: not a supported element type"},
		"unknown attribute": {onnxtest.Model(17, nodes{onnxtest.Node("Identity", []string{"x"}, []string{"y"}, onnxtest.Int("frob", 1))}, x, y),
			"attribute frob is not supported"},
		"no output": {onnxtest.Model(17, nodes{onnxtest.Node("Identity", []string{"x"}, []string{"y"})}, x,
			values{onnxtest.Value("w", nd.Float32, 2)}), `output "w" is not produced`},
		"wrong attribute type": {onnxtest.Model(17, nodes{onnxtest.Node("Constant", nil, []string{"y"}, onnxtest.Int("value", 1))}, nil, y),
			"attribute value is INT, want TENSOR"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := onnxtest.Load(tc.m)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "onnx: test.onnx: ")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := onnx.Parse([]byte("not a model"), "junk.onnx")
	assert.ErrorContains(t, err, "onnx: junk.onnx: not an ONNX model")
}

// A model with several operators the runtime lacks is refused at load with
// one error that names each of them once (its first node, how many more,
// the opset), not the first alone.
func TestLoadNamesEveryMissingOperator(t *testing.T) {
	m := onnxtest.Model(10, nodes{
		onnxtest.Node("Frobnicate", []string{"x"}, []string{"a"}),
		onnxtest.Node("Relu", []string{"a"}, []string{"b"}),
		onnxtest.Node("Range", []string{"b", "b", "b"}, []string{"c"}),
		onnxtest.Node("Frobnicate", []string{"c"}, []string{"d"}),
		onnxtest.Node("FusedConv", []string{"d"}, []string{"e"}),
		onnxtest.Node("Frobnicate", []string{"e"}, []string{"y"}),
	}, values{onnxtest.Value("x", nd.Float32, 2)}, values{onnxtest.Value("y", nd.Float32, 2)})
	m.Graph.Node[0].Name = proto.String("frob1")
	m.Graph.Node[4].Domain = proto.String("com.microsoft")
	m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("com.microsoft"), Version: proto.Int64(1)})
	_, err := onnxtest.Load(m)
	require.Error(t, err)
	assert.Equal(t, "onnx: test.onnx: 3 operators of the model are not supported by this runtime (onnx.Ops lists those it runs; only the default domain, ai.onnx): "+
		`Frobnicate (node "frob1" and 2 more, opset 10), `+
		`Range (node "Range_[c]", opset 10: it first appears in opset 11), `+
		`FusedConv of domain com.microsoft (node "FusedConv_[e]", domain opset 1)`, err.Error())
}

// Inputs of the wrong number, type, rank or size are refused before
// anything runs; a symbolic dimension must agree across inputs.
func TestInputChecks(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(17,
		nodes{onnxtest.Node("Identity", []string{"x"}, []string{"y"}), onnxtest.Node("Identity", []string{"z"}, []string{"w"})},
		values{onnxtest.Value("x", nd.Float32, -1, 2), onnxtest.Value("z", nd.Int64, -1)},
		values{onnxtest.Value("y", nd.Float32, -1, 2), onnxtest.Value("w", nd.Int64, -1)}))
	require.NoError(t, err)
	x := nd.Of([]float32{1, 2, 3, 4}, 2, 2)
	z := nd.Of([]int64{1, 2})
	_, err = m.Run([]nd.Array{x})
	assert.ErrorContains(t, err, "1 inputs for a model of 2")
	_, err = m.Run([]nd.Array{nd.Of([]int64{1, 2, 3, 4}, 2, 2), z})
	assert.ErrorContains(t, err, `input "x" is int64, the model takes float32`)
	_, err = m.Run([]nd.Array{nd.Of([]float32{1, 2, 3, 4}), z})
	assert.ErrorContains(t, err, `input "x" has shape [4], the model takes rank 2`)
	_, err = m.Run([]nd.Array{nd.Of([]float32{1, 2, 3, 4}, 1, 4), nd.Of([]int64{1})})
	assert.ErrorContains(t, err, `the model takes x: float32[Nx2]`)
	_, err = m.Run([]nd.Array{x, nd.Of([]int64{1, 2, 3})})
	assert.ErrorContains(t, err, "dimension N is 3 here and 2 in another input")
	_, err = m.Run([]nd.Array{x, z})
	assert.NoError(t, err)
}

// Float16 inputs and outputs: the model computes in float32, takes Float16
// or Float32 arrays for a Float16 input and rounds Float16 outputs back.
func TestFloat16Edges(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(17,
		nodes{onnxtest.Node("Identity", []string{"x"}, []string{"y"})},
		values{onnxtest.Value("x", nd.Float16, 2)},
		values{onnxtest.Value("y", nd.Float16, 2)}))
	require.NoError(t, err)
	h := nd.Of([]nd.Half{nd.HalfOf(1.5), nd.HalfOf(-2)})
	out, err := m.Run([]nd.Array{h})
	require.NoError(t, err)
	assert.Equal(t, nd.Float16, out[0].Type)
	assert.Equal(t, h.Data, out[0].Data)
	out, err = m.Run([]nd.Array{nd.Of([]float32{1.5, -2})})
	require.NoError(t, err)
	assert.Equal(t, h.Data, out[0].Data)
}
