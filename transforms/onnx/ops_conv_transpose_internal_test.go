package onnx

import (
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
)

// The product and col2im in chunks of input positions that cut rows (down
// to one position a chunk) compute what the plain loop computes, with W
// packed once (a constant's) and for each product, to the same bits.
func TestConvTransposeChunks(t *testing.T) {
	defer func(v int) { convTransposeChunkFloats = v }(convTransposeChunkFloats)
	r := rand.New(rand.NewPCG(5, 28))
	c := &convTranspose{win: window{strides: []int{2, 3}, dilations: []int{1, 2}, pads: []int{2, 1, 1, 3}}, group: 2, outputPadding: []int{1, 0}}
	xs, ws := []int{2, 4, 5, 7}, []int{4, 3, 3, 2}
	g, m, err := c.geometry(xs, ws, nil, false)
	assert.NoError(t, err)
	p := convProblem{geo: g, n: xs[0], c: xs[1], m: m, group: c.group}
	x, w, b := make([]float32, 2*4*5*7), make([]float32, 4*3*3*2), make([]float32, m)
	for _, s := range [][]float32{x, w, b} {
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
	}
	ny := xs[0] * m * g.inSize()
	want := make([]float32, ny)
	convTransposeDirect(p, x, w, b, want)
	c.constW.Store(true)
	wa := c.weights(nd.Of(w, len(w)), p)
	for _, floats := range []int{1, 3 * 6, 3 * 6 * 4, 3 * 6 * 11} {
		convTransposeChunkFloats = floats
		got := make([]float32, ny)
		convTransposeGemm(p, x, w, nil, b, got)
		assert.InDeltaSlice(t, want, got, 1e-4, "chunks of %d floats", floats)
		packed := make([]float32, ny)
		convTransposeGemm(p, x, w, wa, b, packed)
		assert.Equal(t, got, packed, "chunks of %d floats: W packed once, the bits of W packed for each product", floats)
	}
}
