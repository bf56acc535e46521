package onnx_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SpaceToDepth then DepthToSpace (DCR) is the identity, for any element
// type; bad shapes and attributes are refused naming the reason.
func TestDepthSpaceRoundTrip(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(13, nodes{
		onnxtest.Node("SpaceToDepth", []string{"x"}, []string{"d"}, onnxtest.Int("blocksize", 3)),
		onnxtest.Node("DepthToSpace", []string{"d"}, []string{"y"}, onnxtest.Int("blocksize", 3)),
	}, values{onnxtest.Value("x", nd.Int64, 2, 2, 6, 9)}, values{onnxtest.Value("y", nd.Int64, 2, 2, 6, 9), onnxtest.Value("d", nd.Int64, 2, 18, 2, 3)}))
	require.NoError(t, err)
	v := make([]int64, 2*2*6*9)
	for i := range v {
		v[i] = int64(i)
	}
	out, err := m.Run([]nd.Array{nd.Of(v, 2, 2, 6, 9)})
	require.NoError(t, err)
	assert.Equal(t, v, nd.MustAs[int64](out[0]))
	// d[0, (bh*3+bw)*2 + c, h, w] = x[0, c, h*3+bh, w*3+bw]: channel (1*3+2)*2+1 = 11 at (1, 2) is x[0, 1, 1*3+1, 2*3+2].
	assert.Equal(t, v[((0*2+1)*6+4)*9+8], nd.MustAs[int64](out[1])[((0*18+11)*2+1)*3+2])

	for name, c := range map[string]struct {
		op    string
		shape []int
		want  string
	}{
		"channels": {"DepthToSpace", []int{1, 6, 2, 2}, "input X has 6 channels, not a multiple of blocksize² = 4"},
		"spatial":  {"SpaceToDepth", []int{1, 1, 3, 4}, "H and W must be multiples of blocksize 2"},
		"rank":     {"DepthToSpace", []int{4, 2, 2}, "takes N x C x H x W"},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(onnxtest.Model(13, nodes{onnxtest.Node(c.op, []string{"x"}, []string{"y"}, onnxtest.Int("blocksize", 2))},
				values{onnxtest.Value("x", nd.Float32, c.shape...)}, values{onnxtest.Value("y", nd.Float32)}))
			if err == nil {
				_, err = m.Run([]nd.Array{nd.Zeros(nd.Float32, c.shape...)})
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
	_, err = onnxtest.Load(onnxtest.Model(13, nodes{onnxtest.Node("DepthToSpace", []string{"x"}, []string{"y"})},
		values{onnxtest.Value("x", nd.Float32, 1, 4, 1, 1)}, values{onnxtest.Value("y", nd.Float32)}))
	assert.ErrorContains(t, err, "attribute blocksize is required")
}
