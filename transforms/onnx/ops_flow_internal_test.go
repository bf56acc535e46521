package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// readTensor reads a conformance data file.
func readTensor(t *testing.T, path string) nd.Array {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var tp onnxpb.TensorProto
	require.NoError(t, proto.Unmarshal(data, &tp))
	a, err := ArrayOf(&tp, path)
	require.NoError(t, err)
	return a
}

func heapAlloc(t nd.DType, shape []int) (nd.Array, error) { return nd.Zeros(t, shape...), nil }

// kernelOf returns the kernel of m's only node of op.
func kernelOf(t *testing.T, m *Model, op string) Kernel {
	for _, n := range m.g.nodes {
		if n.Op == op {
			return n.kernel
		}
	}
	t.Fatalf("no %s node", op)
	return nil
}

// ONNX's test_loop11 takes its trip count and condition as model inputs:
// the Loop's outputs' shapes depend on them, and Infer says so; RunShaped
// computes ONNX's outputs.
func TestLoopRunShapedConformance(t *testing.T) {
	dir := filepath.Join(os.Getenv("BEAMGPU_ONNX_TESTDATA"), "node", "test_loop11")
	if _, err := os.Stat(dir); os.Getenv("BEAMGPU_ONNX_TESTDATA") == "" || err != nil {
		t.Skip("ONNX conformance data not found (BEAMGPU_ONNX_TESTDATA)")
	}
	m, err := Load(os.DirFS(dir), "model.onnx")
	require.NoError(t, err)
	set := filepath.Join(dir, "test_data_set_0")
	var in []nd.Array
	for i := range 3 {
		in = append(in, readTensor(t, filepath.Join(set, fmt.Sprintf("input_%d.pb", i))))
	}
	k := kernelOf(t, m, "Loop")
	metas := make([]Meta, len(in))
	for i, a := range in {
		metas[i] = Meta{Type: a.Type, Shape: a.Shape}
	}
	_, err = k.Infer(metas)
	require.ErrorIs(t, err, errShapeFromData)
	out, err := k.(DataShaped).RunShaped(in, heapAlloc)
	require.NoError(t, err)
	for i := range 2 {
		want := readTensor(t, filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
		assert.Equal(t, want.Shape, out[i].Shape, "output %d", i)
		assert.Equal(t, nd.MustAs[float32](want), nd.MustAs[float32](out[i]), "output %d", i)
	}
}

// whileTrue is a Loop without a trip count whose body gives its condition
// back (true) and counts in its carried value: it runs until its bound.
func whileTrue() *Model {
	i64 := int32(nd.Int64)
	b := int32(nd.Bool)
	val := func(name string, et *int32) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: &name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: et}}}}
	}
	node := func(op string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		name := op
		return &onnxpb.NodeProto{OpType: &op, Name: &name, Input: in, Output: out, Attribute: attrs}
	}
	gname, attr, typ := "body", "body", onnxpb.AttributeProto_GRAPH
	one := TensorOf("one", nd.Scalar(int64(1)))
	body := &onnxpb.GraphProto{Name: &gname,
		Node:        []*onnxpb.NodeProto{node("Identity", []string{"c"}, []string{"c_out"}), node("Add", []string{"n", "one"}, []string{"n_out"})},
		Input:       []*onnxpb.ValueInfoProto{val("i", &i64), val("c", &b), val("n", &i64)},
		Output:      []*onnxpb.ValueInfoProto{val("c_out", &b), val("n_out", &i64)},
		Initializer: []*onnxpb.TensorProto{one}}
	loop := node("Loop", []string{"", "", "n0"}, []string{"n"}, &onnxpb.AttributeProto{Name: &attr, Type: &typ, G: body})
	ir, v, mname := int64(8), int64(13), "while"
	mp := &onnxpb.ModelProto{IrVersion: &ir, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: &v}},
		Graph: &onnxpb.GraphProto{Name: &mname, Node: []*onnxpb.NodeProto{loop},
			Input: []*onnxpb.ValueInfoProto{val("n0", &i64)}, Output: []*onnxpb.ValueInfoProto{val("n", &i64)}}}
	data, err := proto.Marshal(mp)
	if err != nil {
		panic(err)
	}
	m, err := Parse(data, "while.onnx")
	if err != nil {
		panic(err)
	}
	return m
}

// A loop whose condition stays true stops at maxLoopIterations with an
// error naming the node, rather than running for ever.
func TestLoopIterationBound(t *testing.T) {
	defer func(n int64) { maxLoopIterations = n }(maxLoopIterations)
	maxLoopIterations = 1000
	m := whileTrue()
	_, err := m.Run([]nd.Array{nd.Of([]int64{0})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `node "Loop" (Loop, opset 13): the loop ran 1000 iterations, the most one run of a Loop may`)
}
