package onnx

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each blocked kernel this CPU runs gives the plain Go loop's sums, for
// every number of blocks and positions it has, over several channel
// blocks, taps, strides and dilations, started at the bias or at the sums
// in its output, with a residual added or none, activated (Relu, Clip,
// HardSwish) or not, and writes nothing outside its tile (nor to the residual).
func TestNCHWcTileVectorAndGo(t *testing.T) {
	const B = nchwcBlock
	r := rand.New(rand.NewPCG(71, 72))
	saved := nchwcWidth
	defer func() { nchwcWidth = saved }()
	for _, width := range simdWidths() {
		for fbg := 1; fbg <= nchwcGroupBlocks(width); fbg++ {
			nchwcWidth = width
			maxNP := nchwcMaxPositions(fbg)
			for np := 1; np <= maxNP; np++ {
				bi := []int{B, 1}[(np/2+fbg)%2] // 16 input channels a step, or one (NCHW planes)
				cbs, kh, kw := 1+r.IntN(3), 1+r.IntN(3), 1+r.IntN(3)
				if bi == 1 {
					cbs = 1 + r.IntN(5)
				}
				wp := 20
				xs, rowStep, colStep := bi*(1+r.IntN(2)), wp*bi*(1+r.IntN(2)), bi*(1+r.IntN(2))
				cbStride := 7 * wp * bi
				x := uniform(r, cbs*cbStride)
				w := uniform(r, cbs*kh*kw*bi*fbg*B)
				bias := uniform(r, fbg*B)
				ldy := nchwcPositions * B
				want := make([]float32, fbg*ldy)
				got := make([]float32, fbg*ldy)
				for i := range got {
					want[i], got[i] = float32(math.NaN()), float32(math.NaN())
				}
				acc := np%2 == 0 // from the sums in y
				if acc {
					for f := range fbg {
						for i := range np * B {
							want[f*ldy+i] = float32(r.NormFloat64())
							got[f*ldy+i] = want[f*ldy+i]
						}
					}
				}
				var z, z0 []float32 // a residual added as the sums are stored, laid out as y, for some
				if (np+fbg)%3 != 0 {
					z = uniform(r, fbg*ldy)
					z0 = append([]float32(nil), z...)
				}
				// Clamped as Relu, as a Clip, or not.
				act := testActs(width, z == nil)[(np+2*fbg)%4]
				nchwcTileGo(want, ldy, x, xs, cbStride, cbs, kh, kw, rowStep, colStep, w, bias, fbg, np, acc, bi, z, &act)
				nchwcWidth = width
				nchwcTile(got, ldy, x, xs, cbStride, cbs, kh, kw, rowStep, colStep, w, bias, fbg, np, acc, bi, z, &act)
				require.Equal(t, z0, z, "%d lanes, %d blocks, %d positions: the residual written", width, fbg, np)
				for i := range want {
					if math.IsNaN(float64(want[i])) {
						require.True(t, math.IsNaN(float64(got[i])), "%d lanes, %d blocks, %d positions, %d channels a step: written outside the tile at %d", width, fbg, np, bi, i)
						continue
					}
					require.InDelta(t, want[i], got[i], 1e-4, "%d lanes, %d blocks, %d positions, %d channels a step: element %d", width, fbg, np, bi, i)
				}
			}
		}
	}
}

// testActs are the activations the kernels' tests apply: none, Relu, a
// Clip, and HardSwish where the kernels of width take it (AVX-512, no
// residual; else Relu again).
func testActs(width int, swish bool) [4]nchwcAct {
	hs := nchwcAct{lo: 0, hi: 1, alpha: 1.0 / 6, beta: 0.5, swish: true}
	if width != 16 || !swish {
		hs = nchwcAct{lo: 0, hi: nchwcNoAct.hi}
	}
	return [4]nchwcAct{nchwcNoAct, {lo: 0, hi: nchwcNoAct.hi}, {lo: -0.5, hi: 0.7}, hs}
}

// Each depthwise blocked kernel this CPU runs gives the plain Go loop's
// sums, for every number of positions, activated (Relu, Clip, HardSwish) or
// not, and writes nothing outside its tile.
func TestNCHWcDwTileVectorAndGo(t *testing.T) {
	const B = nchwcBlock
	r := rand.New(rand.NewPCG(77, 78))
	saved := nchwcWidth
	defer func() { nchwcWidth = saved }()
	for _, width := range simdWidths() {
		nchwcWidth = width
		for np := 1; np <= nchwcDwMaxPositions(); np++ {
			kh, kw := 1+r.IntN(5), 1+r.IntN(5)
			wp := 24
			xs, rowStep, colStep := B*(1+r.IntN(2)), wp*B*(1+r.IntN(2)), B*(1+r.IntN(2))
			x := uniform(r, 12*wp*B)
			w := uniform(r, kh*kw*B)
			bias := uniform(r, B)
			want := make([]float32, (nchwcPositions+2)*B)
			got := make([]float32, (nchwcPositions+2)*B)
			for i := range got {
				want[i], got[i] = float32(math.NaN()), float32(math.NaN())
			}
			act := testActs(width, true)[np%4]
			nchwcDwTileGo(want, x, xs, kh, kw, rowStep, colStep, w, bias, np, &act)
			nchwcWidth = width
			nchwcDwTile(got, x, xs, kh, kw, rowStep, colStep, w, bias, np, &act)
			for i := range want {
				if math.IsNaN(float64(want[i])) {
					require.True(t, math.IsNaN(float64(got[i])), "%d lanes, %d positions: written outside the tile at %d", width, np, i)
					continue
				}
				require.InDelta(t, want[i], got[i], 1e-5, "%d lanes, %d positions: element %d", width, np, i)
			}
		}
	}
}

// The blocked convolution gives the direct loops' results with each
// kernel this CPU runs and in plain Go, on shapes that exercise channels
// past a block (17, 40), output channels past a block and past a group of
// blocks, positions past a kernel call's 12 (6 on AVX2) and past
// the transposes' blocks of 16, 1x1 to 5x5 kernels, strides 1
// to 3, dilations, padding asymmetric and wider than the kernel, one
// image, no bias, and a fused epilogue (the residual and Clip to [0, 6]).
func TestConvNCHWcEqualsDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	saved, savedPass, savedChunk, savedSlab, savedTasks := nchwcWidth, nchwcPassBytes, nchwcChunkBytes, nchwcSlabBytes, nchwcTasks
	defer func() {
		nchwcWidth, nchwcPassBytes, nchwcChunkBytes, nchwcSlabBytes, nchwcTasks = saved, savedPass, savedChunk, savedSlab, savedTasks
	}()
	for trial := range 66 {
		// Slabs of images, a slab an image, or a task an image (batches
		// of GOMAXPROCS images and more).
		nchwcSlabBytes, nchwcTasks = savedSlab, savedTasks
		switch trial % 4 {
		case 1:
			nchwcSlabBytes = 1
		case 2:
			nchwcTasks = 0
		}
		var in, k, s, d, pads []int
		axes := 2
		if trial%7 == 3 { // a 1-D convolution (rows of one pixel high)
			axes = 1
		}
		for range axes {
			in = append(in, 1+r.IntN(14+26*(trial%2))) // rows of 16 pixels and more
			k = append(k, 1+r.IntN(4))
			s = append(s, 1+r.IntN(3))
			d = append(d, 1+r.IntN(2))
		}
		for range 2 * axes {
			pads = append(pads, r.IntN(5))
		}
		if trial >= 60 { // 3x3 on rows of 7 or 8 outputs: groups of 3 blocks (nchwcGroupBlocksOf) past 12
			axes = 2
			in, k, s, d, pads = []int{5 + r.IntN(6), 7 + trial%2}, []int{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1, 1, 1}
		}
		if trial%5 == 0 && trial < 60 { // pointwise
			k, s, d, pads = k[:0], s[:0], d[:0], pads[:0]
			for range axes {
				k, s, d, pads = append(k, 1), append(s, 1), append(d, 1), append(pads, 0, 0)
			}
		}
		w := window{strides: s, dilations: d, pads: pads, autoPad: "NOTSET"}
		geo, err := w.geometry(in, k)
		if err != nil {
			continue
		}
		cs := []int{16, 17, 32, 40, 3, 8} // 3 and 8: NCHW planes, a channel a step (nchwcIn1)
		p := convProblem{geo: geo, n: 1 + r.IntN(5), c: cs[r.IntN(len(cs))], m: 1 + r.IntN(80), group: 1}
		if trial >= 60 {
			p.n, p.m = 2+r.IntN(2), 12*nchwcBlock+r.IntN(40)
		}
		depthwise := trial%3 == 2 && trial < 60
		if depthwise {
			p.c = 1 + r.IntN(40)
			p.m, p.group = p.c, p.c
		}
		x := uniform(r, p.n*p.c*geo.inSize())
		wt := uniform(r, p.m*p.c/p.group*geo.kSize())
		var bias []float32
		if trial%3 != 0 {
			bias = uniform(r, p.m)
		}
		want := make([]float32, p.n*p.m*geo.outSize())
		convDirect(p, x, wt, bias, want)
		if trial%4 == 1 {
			p.ep = &epilogue{head: "Conv", residual: true, clip: true, lo: 0, hi: 6, ops: []string{"Add", "Clip"}}
			p.z = uniform(r, len(want))
			p.ep.apply(want, p.z)
		}
		if depthwise {
			require.Equal(t, nchwcWidth != 0 && p.c >= nchwcMinChannels && geo.out[2] <= nchwcDwMaxWidth && nchwcCopyFits(p), useNCHWcDepthwise(p), "trial %d: taken?", trial)
		} else {
			require.Equal(t, nchwcWidth != 0 && p.c >= nchwcMinChannels && p.c*geo.kSize() >= nchwcMinDepth && nchwcCopyFits(p), useNCHWc(p), "trial %d: taken?", trial)
		}
		for _, width := range simdWidths() {
			nchwcWidth = width
			if trial%2 == 1 && geo.out[2] < nchwcChunkRow { // a pass a row, a chunk an input block
				nchwcPassBytes, nchwcChunkBytes = 1, 1
			} else {
				nchwcPassBytes, nchwcChunkBytes = savedPass, savedChunk
			}
			got := make([]float32, len(want))
			for i := range got {
				got[i] = float32(math.NaN())
			}
			c := &conv{}
			nw := c.nchwcWeightsOf
			if depthwise {
				nw = c.nchwcDwWeightsOf
			}
			if trial >= 60 && width == 16 {
				require.Equal(t, 3, c.nchwcWeightsOf(wt, p).fb, "trial %d: groups of 3 blocks", trial)
			}
			convNCHWc(p, x, nw(wt, p), bias, got)
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-4, "trial %d (%d lanes) in %v k %v s %v d %v pads %v c %d m %d n %d group %d: element %d", trial, width, in, k, s, d, pads, p.c, p.m, p.n, p.group, i)
			}
		}
	}
}

// With fewer images than cores, the cores take rows of the output where
// the weights are small (nchwcByRows): the blocked convolution gives the
// direct loops' results so, 1x1 and 3x3, a residual and Clip, on two and
// three cores, every width.
func TestConvNCHWcByRows(t *testing.T) {
	r := rand.New(rand.NewPCG(77, 78))
	saved := nchwcWidth
	defer func() { nchwcWidth = saved }()
	require.True(t, nchwcByRows(2, 1, 64*64, 64*30*30, false))
	require.False(t, nchwcByRows(1, 1, 64*64, 64*30*30, false), "one core")
	require.False(t, nchwcByRows(2, 2, 64*64, 64*30*30, false), "images for every core")
	require.False(t, nchwcByRows(2, 1, 2048*512, 2048*7*7, false), "weights past the input")
	require.False(t, nchwcByRows(2, 1, 64*9, 64*30*30, true), "depthwise")
	for _, procs := range []int{2, 3} {
		for _, k := range []int{1, 3} {
			in := []int{13, 11}
			pad := k / 2
			w := window{strides: []int{1, 1}, dilations: []int{1, 1}, pads: []int{pad, pad, pad, pad}, autoPad: "NOTSET"}
			geo, err := w.geometry(in, []int{k, k})
			require.NoError(t, err)
			p := convProblem{geo: geo, n: 1, c: 32, m: 40, group: 1}
			x := uniform(r, p.c*geo.inSize())
			wt := uniform(r, p.m*p.c*geo.kSize())
			bias := uniform(r, p.m)
			want := make([]float32, p.m*geo.outSize())
			convDirect(p, x, wt, bias, want)
			p.ep = &epilogue{head: "Conv", residual: true, clip: true, lo: 0, hi: 6, ops: []string{"Add", "Clip"}}
			p.z = uniform(r, len(want))
			p.ep.apply(want, p.z)
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				for _, width := range simdWidths() {
					nchwcWidth = width
					got := make([]float32, len(want))
					c := &conv{}
					convNCHWc(p, x, c.nchwcWeightsOf(wt, p), bias, got)
					for i := range want {
						require.InDelta(t, want[i], got[i], 1e-4, "%d cores, %dx%d, %d lanes: element %d", procs, k, k, width, i)
					}
				}
			}()
		}
	}
}

// The transposes of the blocked convolution give the plain loop's, at
// every width this CPU runs.
func TestTranspose16VectorAndGo(t *testing.T) {
	r := rand.New(rand.NewPCG(75, 76))
	saved := nchwcWidth
	defer func() { nchwcWidth = saved }()
	src := uniform(r, 16*21)
	for _, width := range simdWidths() {
		nchwcWidth = width
		dst := make([]float32, 16*19)
		if !transpose16(dst, 19, src, 21) {
			require.Zero(t, width, "no transpose at %d lanes", width)
			continue
		}
		for i := range 16 {
			for j := range 19 {
				if j < 16 {
					require.Equal(t, src[j*21+i], dst[i*19+j], "%d lanes: element %d, %d", width, i, j)
				} else {
					require.Zero(t, dst[i*19+j], "%d lanes: written past the block at %d, %d", width, i, j)
				}
			}
		}
	}
}

// A model whose pads dwarf its image (the padded copy would be millions of
// times the input and output) does not take the blocked path, whose copy
// is whole; an ordinary padded layer does.
func TestNCHWcRefusesHugePads(t *testing.T) {
	for _, c := range []struct {
		pads, strides int
		want          bool
	}{{1, 1, true}, {4, 1, true}, {100000, 100000, false}} {
		w := window{strides: []int{c.strides, c.strides}, pads: []int{c.pads, c.pads, c.pads, c.pads}, autoPad: "NOTSET"}
		geo, err := w.geometry([]int{7, 7}, []int{3, 3})
		require.NoError(t, err)
		p := convProblem{geo: geo, n: 1, c: 64, m: 64, group: 1}
		require.Equal(t, c.want, nchwcCopyFits(p), "pads %d, strides %d", c.pads, c.strides)
		if nchwcWidth != 0 {
			require.Equal(t, c.want, useNCHWc(p), "pads %d, strides %d", c.pads, c.strides)
			p.m, p.group = 64, 64
			require.Equal(t, c.want && geo.out[2] <= nchwcDwMaxWidth, useNCHWcDepthwise(p), "depthwise, pads %d, strides %d", c.pads, c.strides)
		}
	}
}

// Groups of 3 output blocks are taken for batches of images on rows of 7
// or 8 outputs with 12 blocks of M or more, on AVX-512 only.
func TestNCHWcGroupBlocksOf(t *testing.T) {
	conv := func(n, m, h, k int) convProblem {
		w := window{strides: []int{1, 1}, dilations: []int{1, 1}, pads: []int{k / 2, k / 2, k / 2, k / 2}, autoPad: "NOTSET"}
		geo, err := w.geometry([]int{h, h}, []int{k, k})
		require.NoError(t, err)
		return convProblem{geo: geo, n: n, c: 512, m: m, group: 1}
	}
	for _, c := range []struct {
		p     convProblem
		width int
		want  int
	}{
		{conv(8, 512, 7, 3), 16, 3},
		{conv(2, 192, 8, 3), 16, 3},
		{conv(1, 512, 7, 3), 16, 4},  // one image: its weights come from memory
		{conv(8, 512, 14, 3), 16, 4}, // rows of 14
		{conv(8, 512, 6, 3), 16, 4},  // one call of four blocks
		{conv(8, 176, 7, 3), 16, 4},  // 11 blocks
		{conv(8, 512, 7, 1), 16, 4},  // pointwise: runs of the plane
		{conv(8, 512, 7, 3), 8, 1},
	} {
		require.Equal(t, c.want, nchwcGroupBlocksOf(c.p, c.width), "n %d m %d out %v k %v width %d", c.p.n, c.p.m, c.p.geo.out, c.p.geo.k, c.width)
	}
}

// nextWeights asks for every line of the next group over a task's calls,
// no more than nchwcPrefetchLines a call, and for nothing past them.
func TestNextWeights(t *testing.T) {
	for _, c := range []struct{ lines, calls, want int }{
		{1000, 50, 1000},
		{100, 7, 100},
		{1000, 7, 7 * nchwcPrefetchLines},
		{10000, 10, 10 * nchwcPrefetchLines},
		{5, 0, 5},
		{0, 3, 0},
	} {
		var n nextWeights
		w := make([]float32, c.lines*16)
		n.start(w, c.calls)
		got := 0
		for range max(c.calls, 1) {
			k := n.call()
			require.LessOrEqual(t, k, nchwcPrefetchLines)
			got += k
		}
		require.Equal(t, c.want, got, "%d lines over %d calls", c.lines, c.calls)
		require.Equal(t, c.lines*16-got*16, len(n.rest))
		if c.want == c.lines {
			require.Zero(t, n.call(), "a call past the group's lines")
		}
	}
}
