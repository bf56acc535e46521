package onnx

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/require"
)

// The depthwise kernel gives the direct loops' results with each vector
// kernel this CPU runs (AVX-512, AVX2) and in plain Go (other CPUs), and
// writes nothing past its output, on shapes that exercise the
// stripes' masks, the four-row blocks' remainders, strides 1, 2 and 3, 3-D
// kernels and multipliers.
func TestDepthwiseVectorAndGo(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	saved := dwWidth
	defer func() { dwWidth = saved }()
	for trial := range 60 {
		nsp := 2 + trial%2
		var in, k, s, d, pads []int
		for range nsp {
			in = append(in, 3+r.IntN(48))
			k = append(k, 1+r.IntN(3))
			s = append(s, 1+r.IntN(3))
			d = append(d, 1+r.IntN(2))
		}
		if nsp == 3 {
			in[0] = 1 + r.IntN(4)
		}
		for range 2 * nsp {
			pads = append(pads, r.IntN(2))
		}
		w := window{strides: s, dilations: d, pads: pads, autoPad: "NOTSET"}
		geo, err := w.geometry(in, k)
		if err != nil {
			continue
		}
		group, mult := 1+r.IntN(4), 1+r.IntN(2)
		p := convProblem{geo: geo, n: 1 + r.IntN(2), c: group, m: group * mult, group: group}
		x := uniform(r, p.n*p.c*geo.inSize())
		wt := uniform(r, p.m*geo.kSize())
		bias := uniform(r, p.m)
		want := make([]float32, p.n*p.m*geo.outSize())
		convDirect(p, x, wt, bias, want)
		for _, width := range simdWidths() {
			dwWidth = width
			got := make([]float32, len(want)+17)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			convDepthwise(p, x, wt, bias, got[:len(want)])
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-4, "trial %d (%d lanes) in %v k %v s %v d %v pads %v: element %d", trial, width, in, k, s, d, pads, i)
			}
			for i := len(want); i < len(got); i++ {
				require.True(t, math.IsNaN(float64(got[i])), "trial %d (%d lanes): written past the output at %d", trial, width, i)
			}
		}
	}
}

// The shifted-sum kernel gives the direct loops' results with its vector
// kernel and in plain Go, on shapes that exercise every part of a tile
// left over (output channels past a block of 8, positions past a tile of
// 48), 1-D and 2-D kernels up to 5 wide, strides 1 and 2 (phases), dilations,
// padding asymmetric and wider than the kernel, groups, images, and no
// bias.
func TestFlatVectorAndGo(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	saved := flatWidth
	defer func() { flatWidth = saved }()
	for trial := range 160 {
		nsp := 1 + trial%2
		var in, k, s, d, pads []int
		for range nsp {
			in = append(in, 1+r.IntN(40))
			k = append(k, 1+r.IntN(5))
			s = append(s, 1+r.IntN(2))
			d = append(d, 1+r.IntN(2))
		}
		for range 2 * nsp {
			pads = append(pads, r.IntN(4))
		}
		w := window{strides: s, dilations: d, pads: pads, autoPad: "NOTSET"}
		geo, err := w.geometry(in, k)
		if err != nil {
			continue
		}
		group := 1 + r.IntN(3)
		p := convProblem{geo: geo, n: 1 + r.IntN(3), c: group * (1 + r.IntN(20)), m: group * (1 + r.IntN(20)), group: group}
		x := uniform(r, p.n*p.c*geo.inSize())
		wt := uniform(r, p.m*p.c/group*geo.kSize())
		var bias []float32
		if trial%3 != 0 {
			bias = uniform(r, p.m)
		}
		want := make([]float32, p.n*p.m*geo.outSize())
		convDirect(p, x, wt, bias, want)
		for _, width := range simdWidths() {
			flatWidth = width
			got := make([]float32, len(want))
			for i := range got {
				got[i] = float32(math.NaN())
			}
			c := &conv{}
			convFlat(p, x, c.flatWeightsOf(wt, p), bias, got)
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-4, "trial %d (%d lanes) in %v k %v s %v d %v pads %v group %d c %d m %d: element %d", trial, width, in, k, s, d, pads, group, p.c, p.m, i)
			}
		}
	}
}

// The shifted-sum path takes the small images of CNN layers, and leaves
// large ones (a task's buffers are whole images), thick layers, strides
// past 2 and too few images for the cores to the patches path.
func TestUseFlat(t *testing.T) {
	if !flatVector {
		t.Skip("no vector kernel here: the path is never taken")
	}
	problem := func(n, c, m, size, stride int) convProblem {
		w := window{strides: []int{stride, stride}, pads: []int{1, 1, 1, 1}, autoPad: "NOTSET"}
		geo, err := w.geometry([]int{size, size}, []int{3, 3})
		require.NoError(t, err)
		return convProblem{geo: geo, n: n, c: c, m: m, group: 1}
	}
	many := 2 * runtime.GOMAXPROCS(0)
	require.True(t, useFlat(problem(many, 16, 16, 32, 1)), "ResNet's 16-channel layer")
	require.True(t, useFlat(problem(many, 3, 16, 64, 1)), "an RGB stem")
	require.True(t, useFlat(problem(many, 32, 64, 16, 2)), "a stride-2 layer")
	require.False(t, useFlat(problem(many, 3, 16, 2048, 1)), "a large image")
	require.False(t, useFlat(problem(many, 128, 128, 16, 1)), "a thick layer")
	require.False(t, useFlat(problem(many, 16, 16, 32, 3)), "stride 3")
	require.False(t, useFlat(problem(1, 16, 16, 32, 1)), "one image")
}

// uniform returns n values drawn uniformly from [-1, 1).
func uniform(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 2*r.Float32() - 1
	}
	return v
}

// MaxPool's vector kernels give the Go loops' maxima (NaN where any value
// of the window is NaN, -Inf kept) at every width this CPU runs, on
// windows with strides, dilations and padding, small planes (the stripes'
// masks and the whole-vector stores that spill into the next row) and
// large ones, and write nothing past the output.
func TestMaxPoolVectorAndGo(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	saved := dwWidth
	defer func() { dwWidth = saved }()
	special := []float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1))}
	for trial := range 80 {
		in := []int{1, 1 + r.IntN(30), 1 + r.IntN(30)}
		k := []int{1, 1 + r.IntN(3), 1 + r.IntN(3)}
		w := window{strides: []int{1, 1 + r.IntN(2), 1 + r.IntN(2)}, dilations: []int{1, 1 + r.IntN(2), 1 + r.IntN(2)},
			pads: []int{0, r.IntN(2), r.IntN(2), 0, r.IntN(2), r.IntN(2)}, autoPad: "NOTSET"}
		geo, err := w.geometry(in, k)
		if err != nil || geo.padLo[1] >= geo.k[1] || geo.padLo[2] >= geo.k[2] {
			continue
		}
		planes := 1 + r.IntN(5)
		x := uniform(r, planes*geo.inSize())
		for i := range x {
			if r.IntN(40) == 0 {
				x[i] = special[r.IntN(len(special))]
			}
		}
		want := make([]float32, planes*geo.outSize())
		maxPool(geo, planes, false, x, want, nil, float32(math.Inf(-1)))
		for _, width := range simdWidths() {
			if width == 0 {
				continue
			}
			dwWidth = width
			got := make([]float32, len(want)+17)
			for i := range got {
				got[i] = 12345
			}
			require.True(t, maxPoolVector(geo, planes, x, got[:len(want)]))
			for i := range want {
				if math.IsNaN(float64(want[i])) {
					require.True(t, math.IsNaN(float64(got[i])), "trial %d (%d lanes) in %v k %v: element %d: %v, want NaN", trial, width, in, k, i, got[i])
					continue
				}
				require.Equal(t, want[i], got[i], "trial %d (%d lanes) in %v k %v: element %d", trial, width, in, k, i)
			}
			for i := len(want); i < len(got); i++ {
				require.Equal(t, float32(12345), got[i], "trial %d (%d lanes): written past the output at %d", trial, width, i)
			}
		}
	}
}

// W x patches with W packed once (rowWeights: gemm.PackedA) gives the
// bits of W packed for each product, and the direct loops' values, on
// shapes with odd channel counts, groups, strides 1 and 2, dilation,
// padding wider than the kernel, 1x1 kernels and batch 1.
func TestConvGemmRowsPackedWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for trial := range 40 {
		in := []int{1, 4 + r.IntN(20), 4 + r.IntN(20)}
		k := []int{1, 1 + r.IntN(3), 1 + r.IntN(3)}
		if trial%4 == 0 {
			k = []int{1, 1, 1}
		}
		s := []int{1, 1 + r.IntN(2), 1 + r.IntN(2)}
		d := []int{1, 1 + r.IntN(2), 1}
		pads := []int{0, r.IntN(4), r.IntN(4), 0, r.IntN(4), r.IntN(4)}
		w := window{strides: s, dilations: d, pads: pads, autoPad: "NOTSET"}
		geo, err := w.geometry(in, k)
		if err != nil {
			continue
		}
		group := 1 + r.IntN(3)
		p := convProblem{geo: geo, n: 1 + r.IntN(2), c: group * (1 + r.IntN(7)), m: group * (1 + r.IntN(9)), group: group}
		x := uniform(r, p.n*p.c*geo.inSize())
		wt := uniform(r, p.m*p.c/p.group*geo.kSize())
		bias := uniform(r, p.m)
		want := make([]float32, p.n*p.m*geo.outSize())
		convDirect(p, x, wt, bias, want)
		plain := make([]float32, len(want))
		convGemmRows(p, x, wt, nil, bias, plain)
		c := &conv{group: group}
		c.constW.Store(true)
		wa := c.rowWeights(nd.Of(wt, len(wt)), p)
		packed := make([]float32, len(want))
		convGemmRows(p, x, wt, wa, bias, packed)
		require.Equal(t, plain, packed, "trial %d: in %v k %v s %v d %v pads %v group %d", trial, in, k, s, d, pads, group)
		for i := range want {
			require.InDelta(t, want[i], packed[i], 1e-4, "trial %d: element %d", trial, i)
		}
	}
}

// BenchmarkConvGemmRows times W x patches with W packed once (packed) and
// packed for each product (perProduct), the same bits, on layers that take
// that form: ResNet-50's and MobileNetV3's stems (3 -> 64 7x7 stride 2,
// 3 -> 16 3x3 stride 2 at 224), a 1x1 of 64 -> 64 at 56x56 and one of
// 16 -> 72 at 56x56, at batch 1.
func BenchmarkConvGemmRows(b *testing.B) {
	for _, l := range []struct {
		name          string
		c, m, k, s, h int
	}{{"stem7x7", 3, 64, 7, 2, 224}, {"stem3x3", 3, 16, 3, 2, 224}, {"1x1-64", 64, 64, 1, 1, 56}, {"1x1-16-72", 16, 72, 1, 1, 56}} {
		pad := l.k / 2
		w := window{strides: []int{1, l.s, l.s}, dilations: []int{1, 1, 1}, pads: []int{0, pad, pad, 0, pad, pad}, autoPad: "NOTSET"}
		geo, err := w.geometry([]int{1, l.h, l.h}, []int{1, l.k, l.k})
		require.NoError(b, err)
		p := convProblem{geo: geo, n: 1, c: l.c, m: l.m, group: 1}
		r := rand.New(rand.NewPCG(1, 2))
		x, wt, bias := uniform(r, l.c*geo.inSize()), uniform(r, l.m*l.c*geo.kSize()), uniform(r, l.m)
		y := make([]float32, l.m*geo.outSize())
		c := &conv{group: 1}
		c.constW.Store(true)
		wa := c.rowWeights(nd.Of(wt, len(wt)), p)
		b.Run(l.name+"/packed", func(b *testing.B) {
			for b.Loop() {
				convGemmRows(p, x, wt, wa, bias, y)
			}
		})
		b.Run(l.name+"/perProduct", func(b *testing.B) {
			for b.Loop() {
				convGemmRows(p, x, wt, nil, bias, y)
			}
		})
	}
}

// deint2's vector kernels write deint2Go's values, and nothing past each
// row's n pairs, for every n around their blocks (8 and 16 pairs).
func TestDeint2VectorAndGo(t *testing.T) {
	saved := dwWidth
	defer func() { dwWidth = saved }()
	r := rand.New(rand.NewPCG(33, 34))
	for _, width := range simdWidths() {
		dwWidth = width
		for n := 1; n <= 40; n++ {
			rows, ldd, lds := 1+r.IntN(3), n+r.IntN(3), 2*n+r.IntN(3)
			src := uniform(r, rows*lds)
			even, odd := make([]float32, rows*ldd), make([]float32, rows*ldd)
			for i := range even {
				even[i], odd[i] = -7, -7
			}
			wantE, wantO := slices.Clone(even), slices.Clone(odd)
			deint2Go(wantE, wantO, src, rows, n, ldd, lds)
			deint2(even, odd, src, rows, n, ldd, lds)
			require.Equal(t, wantE, even, "%d lanes, n %d", width, n)
			require.Equal(t, wantO, odd, "%d lanes, n %d", width, n)
		}
	}
}
