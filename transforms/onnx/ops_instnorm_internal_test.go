package onnx

import (
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GroupNormalization and InstanceNormalization on float32 X (read and
// written as float32) give the float64 loop's values rounded to float32,
// at odd sizes, per group and per channel scales, with a mean far from 0.
func TestGroupNormFloat32MatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 18))
	for trial := range 12 {
		groups := 1 + r.IntN(3)
		per := 1 + r.IntN(3)
		c := groups * per
		shape := []int{1 + r.IntN(3), c, 1 + r.IntN(7), 1 + 2*r.IntN(5)}
		k := &groupNorm{name: "GroupNormalization", epsilon: 1e-5, groups: groups, perChannel: trial%2 == 1}
		np := groups
		if k.perChannel {
			np = c
		}
		x32, x64 := float32Array(shape), nd.Array{Type: nd.Float64, Shape: shape, Data: make([]byte, 8*numel(shape))}
		for i := range nd.MustAs[float32](x32) {
			v := float32(5 + 2*r.NormFloat64())
			nd.MustAs[float32](x32)[i] = v
			nd.MustAs[float64](x64)[i] = float64(v)
		}
		params := func() (nd.Array, nd.Array) {
			s, b := float32Array([]int{np}), float32Array([]int{np})
			for i := range np {
				nd.MustAs[float32](s)[i], nd.MustAs[float32](b)[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			return s, b
		}
		s, b := params()
		got := float32Array(shape)
		want := nd.Array{Type: nd.Float64, Shape: shape, Data: make([]byte, 8*numel(shape))}
		require.NoError(t, k.Run([]nd.Array{x32, s, b}, []nd.Array{got}))
		require.NoError(t, k.Run([]nd.Array{x64, s, b}, []nd.Array{want}))
		for i, w := range nd.MustAs[float64](want) {
			assert.InDelta(t, float32(w), nd.MustAs[float32](got)[i], 1e-6*(1+abs64(w)), "trial %d element %d", trial, i)
		}
	}
}

func abs64(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
