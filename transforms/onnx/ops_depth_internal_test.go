package onnx

import (
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SpaceToDepth of float32s by 2 (deint2's rows) moves every element where
// the strided copy of ONNX's reshape-transpose-reshape does, on shapes
// with batches, odd half-widths and rows shorter and longer than a vector.
func TestSpaceToDepth2(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 37))
	k := &depthSpace{block: 2}
	for _, shape := range [][]int{{1, 1, 2, 2}, {2, 3, 4, 6}, {1, 5, 6, 34}, {3, 2, 8, 16}, {1, 4, 10, 50}} {
		x := make([]float32, numel(shape))
		for i := range x {
			x[i] = r.Float32()
		}
		outShape, c, err := k.plan(shape)
		require.NoError(t, err)
		want := make([]float32, len(x))
		copyStrided(nd.Of(want).Data, nd.Of(x).Data, 4, c)
		y := make([]float32, len(x))
		require.NoError(t, k.Run([]nd.Array{nd.Of(x, shape...)}, []nd.Array{nd.Of(y, outShape...)}))
		assert.Equal(t, want, y, "shape %v", shape)
	}
}
