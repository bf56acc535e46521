package onnx_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Forms of the shape and data-movement operators that the conformance data
// lacks (opset 18's Split num_outputs and Pad axes, opset 1's Slice
// attributes, Dropout's legacy mask) and their errors.

func TestShapeOpForms(t *testing.T) {
	x := nd.Of([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2, 5)
	ints := func(name string, v ...int64) onnxtest.Named { return onnxtest.Init(name, nd.Of(v, len(v))) }
	for name, tc := range map[string]struct {
		opset  int
		op     string
		inputs []string
		attrs  []*onnxpb.AttributeProto
		inits  []onnxtest.Named
		shape  []int
		want   []float32
	}{
		"Pad 18 axes input": {18, "Pad", []string{"x", "pads", "", "axes"}, nil,
			[]onnxtest.Named{ints("pads", 1, 0), ints("axes", -2)}, []int{3, 5}, []float32{0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		"Pad 2 attributes, reflect": {2, "Pad", []string{"x"},
			[]*onnxpb.AttributeProto{onnxtest.Ints("pads", 0, 2, 0, 0), onnxtest.String("mode", "reflect")}, nil, []int{2, 7},
			[]float32{3, 2, 1, 2, 3, 4, 5, 8, 7, 6, 7, 8, 9, 10}},
		"Pad 11 negative pads crop": {11, "Pad", []string{"x", "pads"}, nil,
			[]onnxtest.Named{ints("pads", 0, -1, 0, -2)}, []int{2, 2}, []float32{2, 3, 7, 8}},
		"Slice 1 attributes": {1, "Slice", []string{"x"},
			[]*onnxpb.AttributeProto{onnxtest.Ints("starts", 1), onnxtest.Ints("ends", 1000), onnxtest.Ints("axes", 1)}, nil, []int{2, 4},
			[]float32{2, 3, 4, 5, 7, 8, 9, 10}},
		"Slice 13 negative step to the start": {13, "Slice", []string{"x", "starts", "ends", "axes", "steps"}, nil,
			[]onnxtest.Named{ints("starts", -1), ints("ends", -1000), ints("axes", 1), ints("steps", -2)}, []int{2, 3},
			[]float32{5, 3, 1, 10, 8, 6}},
		"Expand to more axes": {13, "Expand", []string{"x", "shape"}, nil,
			[]onnxtest.Named{ints("shape", 2, 1, 1)}, []int{2, 2, 5},
			[]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		"Reshape 14 allowzero keeps a 0": {14, "Reshape", []string{"x", "shape"},
			[]*onnxpb.AttributeProto{onnxtest.Int("allowzero", 0)}, []onnxtest.Named{ints("shape", 0, -1)}, []int{2, 5},
			[]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(oneNode(tc.opset, tc.op, tc.inputs, []int{2, 5}, tc.attrs, tc.inits...))
			require.NoError(t, err)
			out, err := m.Run([]nd.Array{x})
			require.NoError(t, err)
			assert.Equal(t, tc.shape, out[0].Shape)
			assert.Equal(t, tc.want, nd.MustAs[float32](out[0]))
		})
	}
}

func TestShapeOpErrors(t *testing.T) {
	x := nd.Zeros(nd.Float32, 2, 5)
	ints := func(name string, v ...int64) onnxtest.Named { return onnxtest.Init(name, nd.Of(v, len(v))) }
	for name, tc := range map[string]struct {
		opset  int
		op     string
		inputs []string
		attrs  []*onnxpb.AttributeProto
		inits  []onnxtest.Named
		want   string
	}{
		"Reshape to another size": {13, "Reshape", []string{"x", "shape"}, nil, []onnxtest.Named{ints("shape", 3, 3)},
			"input of shape [2x5] (10 elements) cannot be reshaped to [3x3] (9 elements)"},
		"Slice step 0": {13, "Slice", []string{"x", "starts", "ends", "axes", "steps"}, nil,
			[]onnxtest.Named{ints("starts", 0), ints("ends", 1), ints("axes", 0), ints("steps", 0)}, "step of axis 0 is 0"},
		"Pad crops too much": {11, "Pad", []string{"x", "pads"}, nil, []onnxtest.Named{ints("pads", 0, -3, 0, -3)},
			"remove more than axis 1's 5 elements"},
		"Expand cannot broadcast": {13, "Expand", []string{"x", "shape"}, nil, []onnxtest.Named{ints("shape", 3, 5)},
			"cannot be broadcast"},
		"Gather axis out of range": {13, "Gather", []string{"x", "idx"}, []*onnxpb.AttributeProto{onnxtest.Int("axis", 2)},
			[]onnxtest.Named{ints("idx", 0)}, "axis 2"},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(oneNode(tc.opset, tc.op, tc.inputs, []int{2, 5}, tc.attrs, tc.inits...))
			if err == nil {
				_, err = m.Run([]nd.Array{x})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A Gather index outside the axis fails the run, naming it.
func TestGatherIndexOutOfRange(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(13,
		nodes{onnxtest.Node("Gather", []string{"x", "i"}, []string{"y"})},
		values{onnxtest.Value("x", nd.Float32, 2, 5), onnxtest.Value("i", nd.Int64, 1)},
		values{onnxtest.ValueNoShape("y", nd.Float32)}))
	require.NoError(t, err)
	_, err = m.Run([]nd.Array{nd.Zeros(nd.Float32, 2, 5), nd.Of([]int64{2}, 1)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "index 2 (element 0 of indices) is out of range for axis 0 of size 2")
}

// Split into two outputs: opset 18's num_outputs makes the last part the
// smaller one; without it the parts must be equal.
func TestSplitOutputs(t *testing.T) {
	x := nd.Of([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2, 5)
	model := func(opset int, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
		return onnxtest.Model(opset,
			nodes{onnxtest.Node("Split", []string{"x"}, []string{"a", "b"}, attrs...)},
			values{onnxtest.Value("x", nd.Float32, 2, 5)},
			values{onnxtest.ValueNoShape("a", nd.Float32), onnxtest.ValueNoShape("b", nd.Float32)})
	}
	m, err := onnxtest.Load(model(18, onnxtest.Int("axis", 1), onnxtest.Int("num_outputs", 2)))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{x})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2, 3, 6, 7, 8}, nd.MustAs[float32](out[0]))
	assert.Equal(t, []float32{4, 5, 9, 10}, nd.MustAs[float32](out[1]))

	m, err = onnxtest.Load(model(13, onnxtest.Int("axis", 1)))
	if err == nil {
		_, err = m.Run([]nd.Array{x})
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "axis 1 of size 5 does not split into 2 equal parts")

	_, err = onnxtest.Load(model(18, onnxtest.Int("axis", 1), onnxtest.Int("num_outputs", 3)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "attribute num_outputs is 3, the node has 2 outputs")
}

// A Split output left out (an empty name) still takes its part: the next
// output starts after it.
func TestSplitLeftOutOutput(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(13,
		nodes{onnxtest.Node("Split", []string{"x", "split"}, []string{"", "b"}, onnxtest.Int("axis", 1))},
		values{onnxtest.Value("x", nd.Float32, 2, 5)},
		values{onnxtest.ValueNoShape("b", nd.Float32)},
		onnxtest.Init("split", nd.Of([]int64{3, 2}, 2))))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2, 5)})
	require.NoError(t, err)
	assert.Equal(t, []int{2, 2}, out[0].Shape)
	assert.Equal(t, []float32{4, 5, 9, 10}, nd.MustAs[float32](out[0]))
}
