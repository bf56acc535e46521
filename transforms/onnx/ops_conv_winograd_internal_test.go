package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// toBlocked lays out x (n x c x size, NCHW) as the plan's blocked layout
// ([n][c/16][size][16], the channels past c zeros), as a reorder step does.
func toBlocked(x []float32, n, c, size int) []float32 {
	r := reorderRun{x: x, c: c, cb: (c + nchwcBlock - 1) / nchwcBlock, hw: size}
	r.y = make([]float32, n*r.cb*size*nchwcBlock)
	for t := range n * r.cb {
		r.block(t)
	}
	return r.y
}

// The AVX-512 transforms give the Go loops' bits: tiles 1 to 9, rows and
// transformed positions apart as the run lays them out, a residual or
// none, Relu, Clip and none, NaN and -0 among the values.
func TestWinoTransformsVectorAndGo(t *testing.T) {
	if nchwcWidth != 16 {
		t.Skip("no AVX-512 here: the transforms run in Go alone")
	}
	const B = nchwcBlock
	r := rand.New(rand.NewPCG(91, 92))
	acts := []nchwcAct{nchwcNoAct, {lo: 0, hi: float32(math.Inf(1))}, {lo: -0.5, hi: 0.75}}
	for trial := range 60 {
		k := 1 + trial%9
		ld := (2*k + 2 + r.IntN(5)) * B
		xi := k*B + r.IntN(3)*B
		x := uniform(r, 4*ld)
		x[r.IntN(len(x))] = float32(math.NaN())
		x[r.IntN(len(x))] = float32(math.Copysign(0, -1))
		want, got := make([]float32, 16*xi), make([]float32, 16*xi)
		winoInGo(want, xi, x, ld, k)
		require.True(t, winoInVector(got, xi, x, ld, k))
		require.Equal(t, bitsOf(want), bitsOf(got), "winoIn trial %d: k %d", trial, k)

		m := uniform(r, 16*xi)
		m[r.IntN(len(m))] = float32(math.NaN())
		bias := uniform(r, B)
		yld := 2*k*B + r.IntN(3)*B
		var z []float32
		if trial%2 == 1 {
			z = uniform(r, 2*yld)
		}
		act := &acts[trial%3]
		wantY, gotY := make([]float32, 2*yld), make([]float32, 2*yld)
		winoOutGo(wantY, yld, m, xi, bias, z, k, act)
		require.True(t, winoOutVector(gotY, yld, m, xi, bias, z, k, act))
		require.Equal(t, bitsOf(wantY), bitsOf(gotY), "winoOut trial %d: k %d, residual %v, act %v", trial, k, z != nil, *act)
	}
}

func bitsOf(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}

// Winograd's F(2x2, 3x3) gives the direct convolution's results, within
// float32 rounding, on odd and even rows and columns (tiles past the last
// row and column), images of one pixel, one to three images, 16 to 48
// input channels, output groups of 4 blocks and fewer (16 channels, which
// useWinograd leaves to the direct kernel, too), a residual (Y
// written over it too) with Relu or Clip, no bias, and tasks cut within a
// row of tiles; at every width this CPU runs, the transforms in Go too.
func TestWinogradEqualsDirect(t *testing.T) {
	const B = nchwcBlock
	r := rand.New(rand.NewPCG(93, 94))
	saved, savedChunk, savedMin := nchwcWidth, winoChunkBytes, winoMinTiles
	defer func() { nchwcWidth, winoChunkBytes, winoMinTiles = saved, savedChunk, savedMin }()
	for trial := range 40 {
		h, w := 1+r.IntN(13), 1+r.IntN(13)
		if trial < 4 {
			h, w = 1+trial/2, 1+trial%2
		}
		win := window{strides: []int{1, 1}, dilations: []int{1, 1}, pads: []int{1, 1, 1, 1}, autoPad: "NOTSET"}
		geo, err := win.geometry([]int{h, w}, []int{3, 3})
		require.NoError(t, err)
		p := convProblem{geo: geo, n: 1 + r.IntN(3), c: B * (1 + r.IntN(3)), m: B * (1 + r.IntN(6)), group: 1}
		p.layout = convLayout{x: true, y: true}
		x := uniform(r, p.n*p.c*h*w)
		wt := uniform(r, p.m*p.c*9)
		var bias []float32
		if trial%3 != 0 {
			bias = uniform(r, p.m)
		}
		want := make([]float32, p.n*p.m*h*w)
		convDirect(p, x, wt, bias, want)
		var z []float32
		switch trial % 4 {
		case 1:
			p.ep = &epilogue{head: "Conv", residual: true, unary: &ewUnary{op: unRelu}, ops: []string{"Add", "Relu"}}
		case 2:
			p.ep = &epilogue{head: "Conv", residual: true, clip: true, lo: -0.25, hi: 0.5, ops: []string{"Add", "Clip"}}
		case 3:
			p.ep = &epilogue{head: "Conv", unary: &ewUnary{op: unRelu}, ops: []string{"Relu"}}
		}
		if p.ep != nil && p.ep.residual {
			z = uniform(r, len(want))
			p.layout.z = true
		}
		p.ep.applyAll(want, z)
		wantB := toBlocked(want, p.n, p.m, h*w)
		xb := toBlocked(x, p.n, p.c, h*w)
		var zb []float32
		if z != nil {
			zb = toBlocked(z, p.n, p.m, h*w)
		}
		winoChunkBytes, winoMinTiles = savedChunk, savedMin
		if trial%2 == 1 { // tasks of a few tiles, cut within rows
			winoChunkBytes, winoMinTiles = 1, 1+r.IntN(4)
		}
		for _, width := range simdWidths() {
			nchwcWidth = width
			got := make([]float32, len(wantB))
			for i := range got {
				got[i] = float32(math.NaN())
			}
			p.z = zb
			over := zb != nil && trial%8 == 1
			if over { // Y written over Z
				got = append([]float32(nil), zb...)
				p.z = got
			}
			c := &conv{}
			if width == 16 {
				taken := p.c >= winoMinChannels && p.m >= winoMinChannels && p.n*((h+1)/2)*((w+1)/2) >= winoMinTiles
				require.Equal(t, taken, useWinograd(p), "trial %d: taken?", trial)
			}
			convWinograd(p, xb, c.winoWeightsOf(wt, p), bias, got)
			for i := range wantB {
				require.InDelta(t, wantB[i], got[i], 1e-4, "trial %d (%d lanes) %dx%d c %d m %d n %d, residual %v over %v: element %d", trial, width, h, w, p.c, p.m, p.n, z != nil, over, i)
			}
		}
	}
}

// useWinograd takes 3x3 convolutions of stride and dilation 1 and padding
// 1 on whole blocks, blocked in and out, and no other.
func TestUseWinograd(t *testing.T) {
	if nchwcWidth != 16 {
		t.Skip("Winograd's path is AVX-512's")
	}
	base := func() convProblem {
		win := window{strides: []int{1, 1}, dilations: []int{1, 1}, pads: []int{1, 1, 1, 1}, autoPad: "NOTSET"}
		geo, err := win.geometry([]int{14, 14}, []int{3, 3})
		require.NoError(t, err)
		return convProblem{geo: geo, n: 1, c: 64, m: 64, group: 1, layout: convLayout{x: true, y: true}}
	}
	require.True(t, useWinograd(base()))
	for name, change := range map[string]func(p *convProblem){
		"NCHW in":         func(p *convProblem) { p.layout.x = false },
		"NCHW out":        func(p *convProblem) { p.layout.y = false },
		"channels last":   func(p *convProblem) { p.layout.nhwc = true },
		"NCHW residual":   func(p *convProblem) { p.z = make([]float32, 1) },
		"part blocks in":  func(p *convProblem) { p.c = 40 },
		"part blocks out": func(p *convProblem) { p.m = 72 },
		"groups":          func(p *convProblem) { p.group = 2 },
		"stride 2":        func(p *convProblem) { p.geo.stride[2] = 2 },
		"dilation 2":      func(p *convProblem) { p.geo.dil[1] = 2 },
		"5x5":             func(p *convProblem) { p.geo.k[1] = 5 },
		"no padding":      func(p *convProblem) { p.geo.padLo[1] = 0; p.geo.out[1] -= 2 },
		"16 channels in":  func(p *convProblem) { p.c = 16 },
		"16 channels out": func(p *convProblem) { p.m = 16 },
		"16 tiles":        func(p *convProblem) { p.geo.in, p.geo.out = [3]int{1, 7, 7}, [3]int{1, 7, 7} },
		"HardSwish":       func(p *convProblem) { p.ep = &epilogue{unary: &ewUnary{op: unHardSwish}} },
		"Sigmoid":         func(p *convProblem) { p.ep = &epilogue{unary: &ewUnary{op: unSigmoid}} },
	} {
		p := base()
		change(&p)
		require.False(t, useWinograd(p), name)
	}
}

// BenchmarkWinograd runs ResNet-50's 3x3 layers of stride 1 (ReLU after),
// blocked in and out, by the direct kernel and by Winograd's F(2x2, 3x3).
func BenchmarkWinograd(b *testing.B) {
	r := rand.New(rand.NewPCG(95, 96))
	for _, n := range []int{1, 8} {
		for _, l := range []struct{ c, hw int }{{64, 56}, {128, 28}, {256, 14}, {512, 7}} {
			win := window{strides: []int{1, 1}, dilations: []int{1, 1}, pads: []int{1, 1, 1, 1}, autoPad: "NOTSET"}
			geo, err := win.geometry([]int{l.hw, l.hw}, []int{3, 3})
			require.NoError(b, err)
			p := convProblem{geo: geo, n: n, c: l.c, m: l.c, group: 1, layout: convLayout{x: true, y: true}}
			p.ep = &epilogue{head: "Conv", unary: &ewUnary{op: unRelu}, ops: []string{"Relu"}}
			x := uniform(r, n*l.c*l.hw*l.hw)
			wt := uniform(r, l.c*l.c*9)
			bias := uniform(r, l.c)
			y := make([]float32, len(x))
			c := &conv{}
			c.constW.Store(true)
			flops := float64(2*9*l.c*l.c*l.hw*l.hw*n) / 1e9
			b.Run(fmt.Sprintf("b%d/c%d/%dx%d/direct", n, l.c, l.hw, l.hw), func(b *testing.B) {
				nw := c.nchwcWeightsOf(wt, p)
				fastest(b, flops, func() { convNCHWc(p, x, nw, bias, y) })
			})
			b.Run(fmt.Sprintf("b%d/c%d/%dx%d/winograd", n, l.c, l.hw, l.hw), func(b *testing.B) {
				ww := c.winoWeightsOf(wt, p)
				fastest(b, flops, func() { convWinograd(p, x, ww, bias, y) })
			})
		}
	}
}

// fastest runs f b.N times and reports its fastest run (the measure a
// loaded machine disturbs least) and the direct convolution's GFLOP/s at
// that time.
func fastest(b *testing.B, gflop float64, f func()) {
	f()
	best := time.Duration(math.MaxInt64)
	for b.Loop() {
		t0 := time.Now()
		f()
		best = min(best, time.Since(t0))
	}
	b.ReportMetric(float64(best)/1e6, "min_ms")
	b.ReportMetric(gflop/best.Seconds(), "GFLOP/s")
}
