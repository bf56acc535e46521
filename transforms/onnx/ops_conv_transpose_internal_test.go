package onnx

import (
	"math/rand/v2"
	"slices"
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

// col2im (stride 2 along the last axis: taps added in interleaved pairs,
// in AVX2 where there is one) gives the bits of the plain loop over each
// tap and position of a chunk, chunk after chunk, on random geometries (odd and even kernel widths,
// pads past the edges, output padding, dilations), in chunks that cut the
// rows; with and without the vector kernel.
func TestCol2imPairs(t *testing.T) {
	defer func(v int) { pairsWidth = v }(pairsWidth)
	r := rand.New(rand.NewPCG(28, 29))
	ran := 0
	for trial := range 60 {
		sw, dw := 2, 1
		if trial%4 == 3 { // the plain path
			sw, dw = 1+r.IntN(3), 1+r.IntN(2)
		}
		c := &convTranspose{win: window{strides: []int{1 + r.IntN(2), sw}, dilations: []int{1 + r.IntN(2), dw},
			pads: []int{r.IntN(3), r.IntN(4), r.IntN(3), r.IntN(4)}}, group: 1, outputPadding: []int{0, r.IntN(2)}}
		xs, ws := []int{1, 1, 1 + r.IntN(5), 1 + r.IntN(40)}, []int{1, 1, 1 + r.IntN(4), 1 + r.IntN(6)}
		g, _, err := c.geometry(xs, ws, nil, false)
		if err != nil {
			continue // pads past the output
		}
		ran++
		P, Q, K := g.outSize(), g.inSize(), g.kSize()
		cols := make([]float32, K*P)
		for i := range cols {
			cols[i] = float32(r.NormFloat64())
		}
		start := make([]float32, Q)
		for i := range start {
			start[i] = float32(r.NormFloat64())
		}
		for _, width := range []int{min(simdWidth, 8), 0} {
			pairsWidth = width
			chunk := 1 + r.IntN(P)
			want, got := slices.Clone(start), slices.Clone(start)
			for p0 := 0; p0 < P; p0 += chunk {
				n := min(chunk, P-p0)
				part := make([]float32, K*n)
				for k := range K {
					copy(part[k*n:(k+1)*n], cols[k*P+p0:])
				}
				col2im(got, part, g, p0, n)
				// the plain loop over the chunk: each tap, each position, in order
				oh, ow := g.out[1], g.out[2]
				row := 0
				for kd := range g.k[0] {
					for kh := range g.k[1] {
						for kw := range g.k[2] {
							for p := p0; p < p0+n; p++ {
								r, w0 := p/ow, p%ow
								id := r/oh*g.stride[0] + kd*g.dil[0] - g.padLo[0]
								ih := r%oh*g.stride[1] + kh*g.dil[1] - g.padLo[1]
								iw := w0*g.stride[2] + kw*g.dil[2] - g.padLo[2]
								if id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2] {
									want[(id*g.in[1]+ih)*g.in[2]+iw] += cols[row*P+p]
								}
							}
							row++
						}
					}
				}
			}
			assert.Equal(t, want, got, "trial %d %+v, chunks of %d, lanes %d", trial, g, chunk, width)
		}
	}
	assert.Greater(t, ran, 40, "geometries tried")
}
