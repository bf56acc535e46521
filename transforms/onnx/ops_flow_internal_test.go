package onnx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// flowModel parses a model of nodes at opset 13 built in Go (graph
// attributes included).
func flowModel(t *testing.T, nodes []*onnxpb.NodeProto, inputs, outputs []*onnxpb.ValueInfoProto) *Model {
	ir, v, name := int64(8), int64(13), "flow"
	mp := &onnxpb.ModelProto{IrVersion: &ir, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: &v}},
		Graph: &onnxpb.GraphProto{Name: &name, Node: nodes, Input: inputs, Output: outputs}}
	data, err := proto.Marshal(mp)
	require.NoError(t, err)
	m, err := Parse(data, "flow.onnx")
	require.NoError(t, err)
	return m
}

func tensorValue(name string, t nd.DType) *onnxpb.ValueInfoProto {
	et := int32(t)
	return &onnxpb.ValueInfoProto{Name: &name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: &et}}}}
}

func flowNode(op string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	name := op
	return &onnxpb.NodeProto{OpType: &op, Name: &name, Input: in, Output: out, Attribute: attrs}
}

func graphAttr(name string, nodes []*onnxpb.NodeProto, inputs, outputs []*onnxpb.ValueInfoProto, inits ...*onnxpb.TensorProto) *onnxpb.AttributeProto {
	typ := onnxpb.AttributeProto_GRAPH
	gname := name
	return &onnxpb.AttributeProto{Name: &name, Type: &typ, G: &onnxpb.GraphProto{Name: &gname, Node: nodes, Input: inputs, Output: outputs, Initializer: inits}}
}

// An If whose branches give different shapes, its condition data: its
// outputs' shapes depend on the data (Infer), and RunShaped gives the
// branch's.
func TestIfDataShaped(t *testing.T) {
	then := graphAttr("then_branch", []*onnxpb.NodeProto{flowNode("Identity", []string{"x"}, []string{"t"})},
		nil, []*onnxpb.ValueInfoProto{tensorValue("t", nd.Float32)})
	otherwise := graphAttr("else_branch", []*onnxpb.NodeProto{flowNode("Concat", []string{"x", "x"}, []string{"e"}, &onnxpb.AttributeProto{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(0)})},
		nil, []*onnxpb.ValueInfoProto{tensorValue("e", nd.Float32)})
	m := flowModel(t, []*onnxpb.NodeProto{flowNode("If", []string{"c"}, []string{"y"}, then, otherwise)},
		[]*onnxpb.ValueInfoProto{tensorValue("x", nd.Float32), tensorValue("c", nd.Bool)}, []*onnxpb.ValueInfoProto{tensorValue("y", nd.Float32)})
	k := kernelOf(t, m, "If")
	x := nd.Of([]float32{1, 2}, 2)
	_, err := k.Infer([]Meta{{Type: nd.Bool, Shape: []int{}}, {Type: nd.Float32, Shape: []int{2}}})
	require.ErrorIs(t, err, errShapeFromData)
	for _, c := range []bool{true, false} {
		out, err := k.(DataShaped).RunShaped([]nd.Array{nd.Scalar(c), x}, heapAlloc)
		require.NoError(t, err)
		want := []float32{1, 2}
		if !c {
			want = []float32{1, 2, 1, 2}
		}
		assert.Equal(t, want, nd.MustAs[float32](out[0]), "cond %v", c)
		// and through the run: the plan ends at the If
		out, err = m.Run([]nd.Array{x, nd.Scalar(c)})
		require.NoError(t, err)
		assert.Equal(t, want, nd.MustAs[float32](out[0]), "cond %v, Model.Run", c)
	}
}

// countdown is a Loop without a trip count, its condition data: it runs
// while n > 0, decrementing n and giving n as a scan output.
func countdown(t *testing.T) *Model {
	one := TensorOf("one", nd.Scalar(int64(1)))
	zero := TensorOf("zero", nd.Scalar(int64(0)))
	body := graphAttr("body", []*onnxpb.NodeProto{
		flowNode("Sub", []string{"n", "one"}, []string{"n_out"}),
		flowNode("Greater", []string{"n_out", "zero"}, []string{"c_out"}),
		flowNode("Identity", []string{"n_out"}, []string{"scan"}),
	}, []*onnxpb.ValueInfoProto{tensorValue("i", nd.Int64), tensorValue("c", nd.Bool), tensorValue("n", nd.Int64)},
		[]*onnxpb.ValueInfoProto{tensorValue("c_out", nd.Bool), tensorValue("n_out", nd.Int64), tensorValue("scan", nd.Int64)}, one, zero)
	return flowModel(t, []*onnxpb.NodeProto{flowNode("Loop", []string{"", "c0", "n0"}, []string{"n", "all"}, body)},
		[]*onnxpb.ValueInfoProto{tensorValue("c0", nd.Bool), tensorValue("n0", nd.Int64)},
		[]*onnxpb.ValueInfoProto{tensorValue("n", nd.Int64), tensorValue("all", nd.Int64)})
}

func TestLoopConditionFromData(t *testing.T) {
	m := countdown(t)
	k := kernelOf(t, m, "Loop")
	_, err := k.Infer([]Meta{{}, {Type: nd.Bool, Shape: []int{}}, {Type: nd.Int64, Shape: []int{}}})
	require.ErrorIs(t, err, errShapeFromData)
	out, err := k.(DataShaped).RunShaped([]nd.Array{{}, nd.Scalar(true), nd.Scalar(int64(4))}, heapAlloc)
	require.NoError(t, err)
	assert.Equal(t, []int64{0}, nd.MustAs[int64](out[0]))
	assert.Equal(t, []int{4}, out[1].Shape)
	assert.Equal(t, []int64{3, 2, 1, 0}, nd.MustAs[int64](out[1]))
	// a condition false from the start runs no iteration
	out, err = k.(DataShaped).RunShaped([]nd.Array{{}, nd.Scalar(false), nd.Scalar(int64(4))}, heapAlloc)
	require.NoError(t, err)
	assert.Equal(t, []int64{4}, nd.MustAs[int64](out[0]))
	assert.Equal(t, []int{0}, out[1].Shape)
	// and through the run, the plan ending at the Loop
	for _, n := range []int64{3, 6} {
		out, err = m.Run([]nd.Array{nd.Scalar(true), nd.Scalar(n)})
		require.NoError(t, err)
		assert.Equal(t, []int{int(n)}, out[1].Shape)
		assert.Equal(t, n-1, nd.MustAs[int64](out[1])[0])
	}
}

// A Loop's scan outputs are held within the memory budget: a loop that
// would hold more fails, naming the node and the budget, before it holds
// it.
func TestLoopMemoryBudget(t *testing.T) {
	t.Setenv(EnvMemoryBudget, "64KiB")
	m := countdown(t)
	k := kernelOf(t, m, "Loop")
	_, err := k.(DataShaped).RunShaped([]nd.Array{{}, nd.Scalar(true), nd.Scalar(int64(1 << 20))}, heapAlloc)
	require.ErrorIs(t, err, ErrMemoryBudget)
	assert.Contains(t, err.Error(), "over the memory budget of 65536 bytes")
}

// A run's context bounds a Loop that would run for long: past its deadline
// the run stops between iterations, naming the node, and the error is the
// context's.
func TestLoopStopsAtTheRunsDeadline(t *testing.T) {
	m := whileTrue() // no iteration bound reached in the time: 2^24
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.RunWith([]nd.Array{nd.Of([]int64{0})}, RunOptions{Context: ctx})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), `node "Loop" (Loop, opset 13): iteration `)
	assert.Contains(t, err.Error(), "the run was stopped")
	assert.Less(t, time.Since(start), 5*time.Second, "the loop stopped soon after the deadline")
	// a context done before the run stops it before its first step
	done, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	_, err = m.RunWith([]nd.Array{nd.Of([]int64{0})}, RunOptions{Context: done})
	require.ErrorIs(t, err, context.Canceled)
}

// A Loop's iterations count against the run's own memory budget
// (RunOptions.MemoryBudget), not the default one: a countdown whose scan
// output would pass it fails naming the budget given.
func TestLoopRunsWithinTheRunsBudget(t *testing.T) {
	m := countdown(t)
	_, err := m.RunWith([]nd.Array{nd.Scalar(true), nd.Scalar(int64(100_000))}, RunOptions{MemoryBudget: 256 << 10})
	require.ErrorIs(t, err, ErrMemoryBudget)
	assert.Contains(t, err.Error(), "of 262144 bytes")
	out, err := m.RunWith([]nd.Array{nd.Scalar(true), nd.Scalar(int64(1000))}, RunOptions{MemoryBudget: 256 << 10})
	require.NoError(t, err)
	assert.Equal(t, []int{1000}, out[1].Shape)
}
