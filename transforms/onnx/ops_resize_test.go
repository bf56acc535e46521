package onnx_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad Resizes are refused at load or when planned, naming the node and
// what is wrong; a size past what an array can hold is refused before the
// memory budget is even asked.
func TestResizeErrors(t *testing.T) {
	x := values{onnxtest.Value("x", nd.Float32, 1, 1, 2, 2)}
	y := values{onnxtest.Value("y", nd.Float32)}
	resize := func(opset int, in []string, attrs []*onnxpb.AttributeProto, inits ...onnxtest.Named) *onnxpb.ModelProto {
		n := onnxtest.Node("Resize", in, []string{"y"}, attrs...)
		name := "up"
		n.Name = &name
		return onnxtest.Model(opset, nodes{n}, x, y, inits...)
	}
	scales := func(v ...float32) onnxtest.Named { return onnxtest.Init("scales", nd.Of(v)) }
	sizes := func(v ...int64) onnxtest.Named { return onnxtest.Init("sizes", nd.Of(v)) }
	for name, tc := range map[string]struct {
		m    *onnxpb.ModelProto
		want string
	}{
		"mode": {resize(13, []string{"x", "", "scales"}, []*onnxpb.AttributeProto{onnxtest.String("mode", "area")}, scales(1, 1, 2, 2)),
			`attribute mode is "area", want one of ["nearest" "linear" "cubic"]`},
		"symmetric before 19": {resize(18, []string{"x", "", "scales"}, []*onnxpb.AttributeProto{onnxtest.String("coordinate_transformation_mode", "half_pixel_symmetric")}, scales(1, 1, 2, 2)),
			`attribute coordinate_transformation_mode is "half_pixel_symmetric"`},
		"antialias before 18": {resize(13, []string{"x", "", "scales"}, []*onnxpb.AttributeProto{onnxtest.Int("antialias", 1)}, scales(1, 1, 2, 2)),
			"attribute antialias is not supported"},
		"both": {resize(13, []string{"x", "", "scales", "sizes"}, nil, scales(1, 1, 2, 2), sizes(1, 1, 4, 4)),
			`node "up" (Resize, opset 13): both scales and sizes are given`},
		"neither":        {resize(13, []string{"x"}, nil), "neither scales nor sizes is given"},
		"scales length":  {resize(13, []string{"x", "", "scales"}, nil, scales(2, 2)), "scales has 2 values for 4 axes"},
		"negative scale": {resize(13, []string{"x", "", "scales"}, nil, scales(1, 1, -2, 2)), "each must be positive and finite"},
		"huge scale":     {resize(13, []string{"x", "", "scales"}, nil, scales(1, 1, 1e30, 1e30)), `node "up" (Resize, opset 13): scales [1 1 1e+30 1e+30]: axis 2 would have`},
		"huge sizes":     {resize(13, []string{"x", "", "", "sizes"}, nil, sizes(1, 1, 1<<30, 1<<30)), "the output would have shape [1x1x1073741824x1073741824]"},
		"axes":           {resize(18, []string{"x", "", "", "sizes"}, []*onnxpb.AttributeProto{onnxtest.Ints("axes", 2, 7)}, sizes(3, 3)), "attribute axes"},
		"policy": {resize(18, []string{"x", "", "", "sizes"}, []*onnxpb.AttributeProto{onnxtest.String("keep_aspect_ratio_policy", "fit")}, sizes(1, 1, 3, 3)),
			"keep_aspect_ratio_policy"},
		"linear ints": {func() *onnxpb.ModelProto {
			m := resize(13, []string{"x", "", "scales"}, []*onnxpb.AttributeProto{onnxtest.String("mode", "linear")}, scales(1, 1, 2, 2))
			m.Graph.Input = values{onnxtest.Value("x", nd.Int32, 1, 1, 2, 2)}
			m.Graph.Output = values{onnxtest.Value("y", nd.Int32)}
			return m
		}(), "input X is int32: Resize linear takes float32 or float64"},
		"upsample shrinks": {func() *onnxpb.ModelProto {
			n := onnxtest.Node("Upsample", []string{"x", "scales"}, []string{"y"})
			return onnxtest.Model(9, nodes{n}, x, y, scales(1, 1, 0.5, 1))
		}(), "Upsample's must be at least 1"},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(tc.m)
			if err == nil {
				xin := nd.Of([]float32{1, 2, 3, 4}, 1, 1, 2, 2)
				if tc.m.Graph.Input[0].GetType().GetTensorType().GetElemType() == int32(nd.Int32) {
					xin = nd.Of([]int32{1, 2, 3, 4}, 1, 1, 2, 2)
				}
				_, err = m.Run([]nd.Array{xin})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Nearest moves elements of any type: int64 and bool resize as float32
// does.
func TestResizeNearestAnyType(t *testing.T) {
	for _, typ := range []nd.DType{nd.Int64, nd.Bool, nd.Uint8} {
		m, err := onnxtest.Load(onnxtest.Model(13, nodes{onnxtest.Node("Resize", []string{"x", "", "scales"}, []string{"y"},
			onnxtest.String("nearest_mode", "floor"))},
			values{onnxtest.Value("x", typ, 1, 3)}, values{onnxtest.Value("y", typ)},
			onnxtest.Init("scales", nd.Of([]float32{1, 2}))))
		require.NoError(t, err)
		x, err := nd.Convert(nd.Of([]float64{1, 0, 1}, 1, 3), typ)
		require.NoError(t, err)
		out, err := m.Run([]nd.Array{x})
		require.NoError(t, err)
		// half_pixel, x2: outputs 0..5 read inputs floor((o+0.5)/2-0.5), clamped: 0 0 0 1 1 2.
		want, err := nd.Convert(nd.Of([]float64{1, 1, 1, 0, 0, 1}, 1, 6), typ)
		require.NoError(t, err)
		assert.Equal(t, want, out[0], "%v", typ)
	}
}
