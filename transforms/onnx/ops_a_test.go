package onnx_test

import (
	"math"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Forms of the elementwise and reduction operators that the conformance data
// lacks: opset 18's Reduce* with axes as an input, noop_with_empty_axes, the
// broadcast and axis attributes of binary operators before opset 7, and the
// errors for shapes that do not fit.

// oneNode is a model of a single node at opset reading x (float32, of
// xshape) and the initializers, writing y.
func oneNode(opset int, op string, inputs []string, xshape []int, attrs []*onnxpb.AttributeProto, inits ...onnxtest.Named) *onnxpb.ModelProto {
	return onnxtest.Model(opset,
		nodes{onnxtest.Node(op, inputs, []string{"y"}, attrs...)},
		values{onnxtest.Value("x", nd.Float32, xshape...)},
		values{onnxtest.ValueNoShape("y", nd.Float32)}, inits...)
}

func TestReduceForms(t *testing.T) {
	x := nd.Of([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	axes := func(v ...int64) onnxtest.Named { return onnxtest.Init("axes", nd.Of(v, len(v))) }
	for name, tc := range map[string]struct {
		opset  int
		op     string
		inputs []string
		attrs  []*onnxpb.AttributeProto
		inits  []onnxtest.Named
		shape  []int
		want   []float32
	}{
		"ReduceMean 18 axes input": {18, "ReduceMean", []string{"x", "axes"}, nil,
			[]onnxtest.Named{axes(1)}, []int{2, 1}, []float32{2, 5}},
		"ReduceMean 18 negative axis, keepdims 0": {18, "ReduceMean", []string{"x", "axes"},
			[]*onnxpb.AttributeProto{onnxtest.Int("keepdims", 0)}, []onnxtest.Named{axes(-2)}, []int{3}, []float32{2.5, 3.5, 4.5}},
		"ReduceMax 18 no axes reduces all": {18, "ReduceMax", []string{"x"}, nil, nil, []int{1, 1}, []float32{6}},
		"ReduceMax 18 empty axes reduces all": {18, "ReduceMax", []string{"x", "axes"}, nil,
			[]onnxtest.Named{axes()}, []int{1, 1}, []float32{6}},
		"ReduceMax 18 noop with empty axes": {18, "ReduceMax", []string{"x", "axes"},
			[]*onnxpb.AttributeProto{onnxtest.Int("noop_with_empty_axes", 1)}, []onnxtest.Named{axes()}, []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}},
		"ReduceMean 18 noop without axes input": {18, "ReduceMean", []string{"x"},
			[]*onnxpb.AttributeProto{onnxtest.Int("noop_with_empty_axes", 1)}, nil, []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}},
		"ReduceMin 18 axes input": {18, "ReduceMin", []string{"x", "axes"},
			[]*onnxpb.AttributeProto{onnxtest.Int("keepdims", 0)}, []onnxtest.Named{axes(0)}, []int{3}, []float32{1, 2, 3}},
		"ReduceMin 13 axes attribute": {13, "ReduceMin", []string{"x"},
			[]*onnxpb.AttributeProto{onnxtest.Ints("axes", -1)}, nil, []int{2, 1}, []float32{1, 4}},
		"ReduceProd 18 axes input": {18, "ReduceProd", []string{"x", "axes"},
			[]*onnxpb.AttributeProto{onnxtest.Int("keepdims", 0)}, []onnxtest.Named{axes(1)}, []int{2}, []float32{6, 120}},
		"ReduceL1 18 no axes": {18, "ReduceL1", []string{"x"}, nil, nil, []int{1, 1}, []float32{21}},
		"ReduceL2 13 axes attribute": {13, "ReduceL2", []string{"x"},
			[]*onnxpb.AttributeProto{onnxtest.Ints("axes", 0), onnxtest.Int("keepdims", 0)}, nil, []int{3},
			[]float32{float32(math.Sqrt(17)), float32(math.Sqrt(29)), float32(math.Sqrt(45))}},
		"ReduceSumSquare 18 noop with empty axes": {18, "ReduceSumSquare", []string{"x", "axes"},
			[]*onnxpb.AttributeProto{onnxtest.Int("noop_with_empty_axes", 1)}, []onnxtest.Named{axes()}, []int{2, 3}, []float32{1, 4, 9, 16, 25, 36}},
		"ReduceLogSum 18 axes input": {18, "ReduceLogSum", []string{"x", "axes"},
			[]*onnxpb.AttributeProto{onnxtest.Int("keepdims", 0)}, []onnxtest.Named{axes(0, 1)}, []int{}, []float32{float32(math.Log(21))}},
		"ReduceSum 13 axes input": {13, "ReduceSum", []string{"x", "axes"},
			[]*onnxpb.AttributeProto{onnxtest.Int("keepdims", 0)}, []onnxtest.Named{axes(0)}, []int{3}, []float32{5, 7, 9}},
		"ReduceSum 13 noop with empty axes": {13, "ReduceSum", []string{"x", "axes"},
			[]*onnxpb.AttributeProto{onnxtest.Int("noop_with_empty_axes", 1)}, []onnxtest.Named{axes()}, []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}},
		"ReduceMean 13 axes attribute": {13, "ReduceMean", []string{"x"},
			[]*onnxpb.AttributeProto{onnxtest.Ints("axes", 0, 1)}, nil, []int{1, 1}, []float32{3.5}},
		"ReduceMax 1 axes attribute": {1, "ReduceMax", []string{"x"},
			[]*onnxpb.AttributeProto{onnxtest.Ints("axes", 1), onnxtest.Int("keepdims", 0)}, nil, []int{2}, []float32{3, 6}},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(oneNode(tc.opset, tc.op, tc.inputs, []int{2, 3}, tc.attrs, tc.inits...))
			require.NoError(t, err)
			out, err := m.Run([]nd.Array{x})
			require.NoError(t, err)
			assert.Equal(t, tc.shape, out[0].Shape)
			assert.Equal(t, tc.want, nd.MustAs[float32](out[0]))
		})
	}
}

// Before opset 7 B broadcasts onto A only with broadcast=1, lined up at
// axis (default: B's dimensions are A's trailing ones).
func TestLegacyBroadcast(t *testing.T) {
	x := nd.Of([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	for name, tc := range map[string]struct {
		opset int
		op    string
		attrs []*onnxpb.AttributeProto
		b     nd.Array
		want  []float32
	}{
		"Add 6 same shape": {6, "Add", nil, nd.Of([]float32{1, 1, 1, 1, 1, 1}, 2, 3), []float32{2, 3, 4, 5, 6, 7}},
		"Add 6 trailing": {6, "Add", []*onnxpb.AttributeProto{onnxtest.Int("broadcast", 1)},
			nd.Of([]float32{10, 20, 30}, 3), []float32{11, 22, 33, 14, 25, 36}},
		"Mul 6 axis 0": {6, "Mul", []*onnxpb.AttributeProto{onnxtest.Int("broadcast", 1), onnxtest.Int("axis", 0)},
			nd.Of([]float32{2, 3}, 2), []float32{2, 4, 6, 12, 15, 18}},
		"Sub 1 scalar": {1, "Sub", []*onnxpb.AttributeProto{onnxtest.Int("broadcast", 1)},
			nd.Scalar(float32(1)), []float32{0, 1, 2, 3, 4, 5}},
		"Div 6 axis -2": {6, "Div", []*onnxpb.AttributeProto{onnxtest.Int("broadcast", 1), onnxtest.Int("axis", -2)},
			nd.Of([]float32{1, 2}, 2), []float32{1, 2, 3, 2, 2.5, 3}},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(oneNode(tc.opset, tc.op, []string{"x", "b"}, []int{2, 3}, tc.attrs, onnxtest.Init("b", tc.b)))
			require.NoError(t, err)
			out, err := m.Run([]nd.Array{x})
			require.NoError(t, err)
			assert.Equal(t, []int{2, 3}, out[0].Shape)
			assert.Equal(t, tc.want, nd.MustAs[float32](out[0]))
		})
	}
}

// Mean: the inputs' sum over their number, broadcast from opset 8.
func TestMean(t *testing.T) {
	x := nd.Of([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	for name, tc := range map[string]struct {
		opset  int
		inputs []string
		inits  []onnxtest.Named
		want   []float32
	}{
		"one input": {13, []string{"x"}, nil, []float32{1, 2, 3, 4, 5, 6}},
		"6 same shape": {6, []string{"x", "b"}, []onnxtest.Named{onnxtest.Init("b", nd.Of([]float32{3, 2, 1, 0, -1, -2}, 2, 3))},
			[]float32{2, 2, 2, 2, 2, 2}},
		"13 broadcast three": {13, []string{"x", "b", "c"}, []onnxtest.Named{
			onnxtest.Init("b", nd.Of([]float32{2, 1}, 2, 1)), onnxtest.Init("c", nd.Scalar(float32(0)))},
			[]float32{1, 4.0 / 3, 5.0 / 3, 5.0 / 3, 2, 7.0 / 3}},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(oneNode(tc.opset, "Mean", tc.inputs, []int{2, 3}, nil, tc.inits...))
			require.NoError(t, err)
			out, err := m.Run([]nd.Array{x})
			require.NoError(t, err)
			assert.Equal(t, []int{2, 3}, out[0].Shape)
			assert.InDeltaSlice(t, tc.want, nd.MustAs[float32](out[0]), 1e-6)
		})
	}
}

// Shapes that do not fit are refused when planning, with the numbers.
func TestElementwiseShapeErrors(t *testing.T) {
	bc := onnxtest.Int("broadcast", 1)
	for name, tc := range map[string]struct {
		opset  int
		op     string
		inputs []string
		attrs  []*onnxpb.AttributeProto
		inits  []onnxtest.Named
		want   string
	}{
		"Add 14 no broadcast": {14, "Add", []string{"x", "b"}, nil,
			[]onnxtest.Named{onnxtest.Init("b", nd.Zeros(nd.Float32, 4))}, "[2x3] and [4]"},
		"Add 6 without broadcast=1": {6, "Add", []string{"x", "b"}, nil,
			[]onnxtest.Named{onnxtest.Init("b", nd.Zeros(nd.Float32, 3))}, "broadcasts only with broadcast=1"},
		"Add 6 B does not match at axis": {6, "Add", []string{"x", "b"}, []*onnxpb.AttributeProto{bc, onnxtest.Int("axis", 0)},
			[]onnxtest.Named{onnxtest.Init("b", nd.Zeros(nd.Float32, 3))}, "at axis 0"},
		"Add 6 B longer than A": {6, "Add", []string{"x", "b"}, []*onnxpb.AttributeProto{bc},
			[]onnxtest.Named{onnxtest.Init("b", nd.Zeros(nd.Float32, 1, 2, 3))}, "[1x2x3]"},
		"Add type mismatch": {14, "Add", []string{"x", "b"}, nil,
			[]onnxtest.Named{onnxtest.Init("b", nd.Zeros(nd.Int64, 3))}, "takes two of one type"},
		"Max 6 shapes differ": {6, "Max", []string{"x", "b"}, nil,
			[]onnxtest.Named{onnxtest.Init("b", nd.Zeros(nd.Float32, 3))}, "before opset 8"},
		"Mean 6 shapes differ": {6, "Mean", []string{"x", "b"}, nil,
			[]onnxtest.Named{onnxtest.Init("b", nd.Zeros(nd.Float32, 1, 3))}, "input 1 has shape [1x3], input 0 [2x3]"},
		"Sum 13 no broadcast": {13, "Sum", []string{"x", "b"}, nil,
			[]onnxtest.Named{onnxtest.Init("b", nd.Zeros(nd.Float32, 2, 2))}, "[2x3]"},
		"ReduceMean 18 axis out of range": {18, "ReduceMean", []string{"x", "axes"}, nil,
			[]onnxtest.Named{onnxtest.Init("axes", nd.Of([]int64{2}, 1))}, "axis 2 is out of range for rank 2"},
		"ReduceSum 13 axes of int32": {13, "ReduceSum", []string{"x", "axes"}, nil,
			[]onnxtest.Named{onnxtest.Init("axes", nd.Of([]int32{0}, 1))}, "int64 axes"},
		"Softmax axis out of range": {13, "Softmax", []string{"x"}, []*onnxpb.AttributeProto{onnxtest.Int("axis", 2)},
			nil, "axis 2 is out of range for rank 2"},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(oneNode(tc.opset, tc.op, tc.inputs, []int{2, 3}, tc.attrs, tc.inits...))
			if err == nil {
				_, err = m.Run([]nd.Array{nd.Zeros(nd.Float32, 2, 3)})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
