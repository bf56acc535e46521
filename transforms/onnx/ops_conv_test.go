package onnx_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// convCase is a convolution: n images of c channels of spatial size in,
// m output channels in group groups, kernel k, strides, dilations, pads
// (begins then ends).
type convCase struct {
	n, c, m, group   int
	in, k, s, d, pad []int
	bias             bool
}

func (cs convCase) String() string {
	return fmt.Sprintf("n%d c%d m%d g%d in%v k%v s%v d%v pads%v bias=%t", cs.n, cs.c, cs.m, cs.group, cs.in, cs.k, cs.s, cs.d, cs.pad, cs.bias)
}

// refConv is a direct convolution in float64, written apart from the
// runtime's: the output's shape and values, and for each value the sum of
// the magnitudes of its terms (the scale of its rounding error).
func refConv(cs convCase, x, w, b []float64) (shape []int, y, mag []float64) {
	nsp := len(cs.in)
	out := make([]int, nsp)
	for i := range out {
		out[i] = (cs.in[i]+cs.pad[i]+cs.pad[nsp+i]-((cs.k[i]-1)*cs.d[i]+1))/cs.s[i] + 1
	}
	shape = append([]int{cs.n, cs.m}, out...)
	cg, mg := cs.c/cs.group, cs.m/cs.group
	inSize, outSize, kSize := numelOf(cs.in), numelOf(out), numelOf(cs.k)
	y, mag = make([]float64, cs.n*cs.m*outSize), make([]float64, cs.n*cs.m*outSize)
	opos, kpos := make([]int, nsp), make([]int, nsp)
	for img := range cs.n {
		for m := range cs.m {
			g := m / mg
			for o := range outSize {
				unflat(o, out, opos)
				var s, a float64
				if cs.bias {
					s, a = b[m], math.Abs(b[m])
				}
				for ci := range cg {
					for kk := range kSize {
						unflat(kk, cs.k, kpos)
						xi, inside := 0, true
						for d := range nsp {
							p := opos[d]*cs.s[d] - cs.pad[d] + kpos[d]*cs.d[d]
							if p < 0 || p >= cs.in[d] {
								inside = false
								break
							}
							xi = xi*cs.in[d] + p
						}
						if !inside {
							continue
						}
						t := x[(img*cs.c+g*cg+ci)*inSize+xi] * w[(m*cg+ci)*kSize+kk]
						s += t
						a += math.Abs(t)
					}
				}
				y[(img*cs.m+m)*outSize+o], mag[(img*cs.m+m)*outSize+o] = s, a
			}
		}
	}
	return shape, y, mag
}

// unflat writes the row-major multi-index of flat index i in shape to idx.
func unflat(i int, shape, idx []int) {
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = i % shape[d]
		i /= shape[d]
	}
}

func i64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// runConvCase runs cs through a Conv model (W and B constants, as weights
// are) and compares it with refConv.
func runConvCase(t *testing.T, r *rand.Rand, cs convCase, opset int) {
	t.Helper()
	x := randF32(r, append([]int{cs.n, cs.c}, cs.in...)...)
	w := randF32(r, append([]int{cs.m, cs.c / cs.group}, cs.k...)...)
	in := []nd.Array{x, w}
	if cs.bias {
		in = append(in, randF32(r, cs.m))
	}
	attrs := []*onnxpb.AttributeProto{onnxtest.Ints("strides", i64s(cs.s)...), onnxtest.Ints("dilations", i64s(cs.d)...), onnxtest.Ints("pads", i64s(cs.pad)...)}
	if cs.group != 1 {
		attrs = append(attrs, onnxtest.Int("group", int64(cs.group)))
	}
	out := mustRun(t, opset, "Conv", in, []bool{false, true, true}, []string{"y"}, attrs...)
	var b []float64
	if cs.bias {
		b = nd.Float64s(in[2])
	}
	shape, want, mag := refConv(cs, nd.Float64s(x), nd.Float64s(w), b)
	require.Equal(t, shape, out[0].Shape, "%v", cs)
	requireClose(t, want, out[0], 1e-5, mag)
}

// Conv agrees with a direct convolution on random shapes: 1 to 3 spatial
// axes, groups (1, some, depthwise, depthwise with a multiplier), strides,
// dilations, asymmetric pads, 1x1 kernels, batches; and on shapes large
// enough to be split into chunks.
func TestConvRandomShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 150 {
		nsp := 1 + trial%3
		cs := convCase{n: 1 + r.IntN(3), bias: r.IntN(2) == 0}
		switch r.IntN(4) {
		case 0:
			cs.group = 1
		case 1:
			cs.group = 1 + r.IntN(3)
		default: // depthwise, sometimes with a multiplier
			cs.group = 1 + r.IntN(6)
		}
		cg, mg := 1+r.IntN(3), 1+r.IntN(3)
		if trial%4 >= 2 {
			cg = 1
		}
		cs.c, cs.m = cg*cs.group, mg*cs.group
		pointwise := r.IntN(6) == 0
		for range nsp {
			size := 1 + r.IntN(12-3*nsp)
			k, s, d := 1+r.IntN(3), 1+r.IntN(3), 1+r.IntN(2)
			if pointwise {
				k, s, d = 1, 1, 1
			}
			cs.in, cs.k, cs.s, cs.d = append(cs.in, size), append(cs.k, k), append(cs.s, s), append(cs.d, d)
		}
		cs.pad = make([]int, 2*nsp)
		for i := range nsp {
			if !pointwise {
				cs.pad[i], cs.pad[nsp+i] = r.IntN(3), r.IntN(3)
			}
			// Grow the input until the window fits.
			for cs.in[i]+cs.pad[i]+cs.pad[nsp+i] < (cs.k[i]-1)*cs.d[i]+1 {
				cs.in[i]++
			}
		}
		t.Run(fmt.Sprintf("%d", trial), func(t *testing.T) { runConvCase(t, r, cs, 11+trial%2*6) })
	}
	for _, cs := range []convCase{
		// chunks of output positions, im2col and pointwise
		{n: 2, c: 16, m: 24, group: 1, in: []int{40, 40}, k: []int{3, 3}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{1, 1, 1, 1}, bias: true},
		{n: 1, c: 16, m: 40, group: 1, in: []int{48, 48}, k: []int{1, 1}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{0, 0, 0, 0}, bias: true},
		{n: 1, c: 8, m: 8, group: 2, in: []int{45, 39}, k: []int{3, 5}, s: []int{2, 1}, d: []int{1, 2}, pad: []int{2, 0, 1, 3}},
		// thick patches (K = 576 and 512): patches^T x packed W, transposed
		{n: 3, c: 64, m: 40, group: 1, in: []int{20, 17}, k: []int{3, 3}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{1, 0, 1, 2}, bias: true},
		{n: 2, c: 512, m: 50, group: 1, in: []int{7, 7}, k: []int{1, 1}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{0, 0, 0, 0}, bias: true},
		{n: 2, c: 256, m: 20, group: 2, in: []int{9, 8}, k: []int{3, 3}, s: []int{2, 1}, d: []int{1, 1}, pad: []int{1, 1, 1, 1}},
		// one-pixel images, one product of the batch (convPixels), in 1, 2 and 3 dimensions
		{n: 8, c: 1152, m: 48, group: 1, in: []int{1, 1}, k: []int{1, 1}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{0, 0, 0, 0}, bias: true},
		{n: 1, c: 40, m: 600, group: 1, in: []int{1}, k: []int{1}, s: []int{2}, d: []int{1}, pad: []int{0, 0}},
		{n: 3, c: 17, m: 33, group: 1, in: []int{1, 1, 1}, k: []int{1, 1, 1}, s: []int{1, 1, 1}, d: []int{1, 1, 1}, pad: []int{0, 0, 0, 0, 0, 0}, bias: true},
		// depthwise, MobileNet's strides 1 and 2, and stride 3
		{n: 2, c: 24, m: 24, group: 24, in: []int{37, 37}, k: []int{3, 3}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{1, 1, 1, 1}, bias: true},
		{n: 2, c: 24, m: 24, group: 24, in: []int{38, 37}, k: []int{3, 3}, s: []int{2, 2}, d: []int{1, 1}, pad: []int{1, 1, 1, 1}, bias: true},
		{n: 1, c: 5, m: 10, group: 5, in: []int{21, 50}, k: []int{5, 5}, s: []int{3, 3}, d: []int{1, 2}, pad: []int{2, 1, 0, 4}},
	} {
		t.Run(cs.String(), func(t *testing.T) { runConvCase(t, r, cs, 17) })
	}
}

// Strides, dilations and asymmetric pads together, in 2-D: each of the
// output's positions against the direct convolution.
func TestConvAsymmetricPadsDilationsStrides(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	cs := convCase{n: 2, c: 3, m: 4, group: 1, in: []int{9, 11}, k: []int{3, 2}, s: []int{2, 3}, d: []int{2, 3}, pad: []int{0, 3, 2, 1}, bias: true}
	runConvCase(t, r, cs, 11)
	// (9+0+2-5)/2+1 = 4 rows, (11+3+1-4)/3+1 = 4 columns
	x := randF32(r, 1, 1, 9, 11)
	w := randF32(r, 1, 1, 3, 2)
	out := mustRun(t, 11, "Conv", []nd.Array{x, w}, []bool{false, true}, []string{"y"},
		onnxtest.Ints("strides", 2, 3), onnxtest.Ints("dilations", 2, 3), onnxtest.Ints("pads", 0, 3, 2, 1))
	assert.Equal(t, []int{1, 1, 4, 4}, out[0].Shape)
}

// auto_pad SAME_UPPER puts the odd padding at the end, SAME_LOWER at the
// beginning; both give ceil(in / stride) outputs; VALID pads nothing.
func TestConvAutoPad(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, tc := range []struct {
		in, k, s    int
		mode        string
		lo, hi, out int
	}{
		{5, 2, 1, "SAME_UPPER", 0, 1, 5},
		{5, 2, 1, "SAME_LOWER", 1, 0, 5},
		{6, 3, 2, "SAME_UPPER", 0, 1, 3},
		{6, 3, 2, "SAME_LOWER", 1, 0, 3},
		{7, 4, 1, "SAME_UPPER", 1, 2, 7},
		{7, 4, 1, "SAME_LOWER", 2, 1, 7},
		{7, 3, 2, "VALID", 0, 0, 3},
	} {
		t.Run(fmt.Sprintf("%s_in%d_k%d_s%d", tc.mode, tc.in, tc.k, tc.s), func(t *testing.T) {
			x := randF32(r, 1, 2, tc.in, tc.in)
			w := randF32(r, 3, 2, tc.k, tc.k)
			out := mustRun(t, 11, "Conv", []nd.Array{x, w}, []bool{false, true}, []string{"y"},
				onnxtest.String("auto_pad", tc.mode), onnxtest.Ints("strides", int64(tc.s), int64(tc.s)))
			require.Equal(t, []int{1, 3, tc.out, tc.out}, out[0].Shape)
			cs := convCase{n: 1, c: 2, m: 3, group: 1, in: []int{tc.in, tc.in}, k: []int{tc.k, tc.k}, s: []int{tc.s, tc.s}, d: []int{1, 1}, pad: []int{tc.lo, tc.lo, tc.hi, tc.hi}}
			_, want, mag := refConv(cs, nd.Float64s(x), nd.Float64s(w), nil)
			requireClose(t, want, out[0], 1e-5, mag)
		})
	}
}

// Groups other than 1 and the channel count: each group of output
// channels sees its own input channels only.
func TestConvGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, g := range []int{2, 3} {
		cs := convCase{n: 2, c: 6, m: 12, group: g, in: []int{7, 6}, k: []int{3, 3}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{1, 0, 1, 2}, bias: true}
		t.Run(fmt.Sprint(g), func(t *testing.T) { runConvCase(t, r, cs, 11) })
	}
	// A hand-made case: 2 groups of 1x1 kernels, channel 0 scaled by 2
	// into output 0, channel 1 by 3 into output 1.
	x := nd.Of([]float32{1, 2, 10, 20}, 1, 2, 1, 2)
	w := nd.Of([]float32{2, 3}, 2, 1, 1, 1)
	out := mustRun(t, 11, "Conv", []nd.Array{x, w}, []bool{false, true}, []string{"y"}, onnxtest.Int("group", 2))
	assert.Equal(t, []float32{2, 4, 30, 60}, nd.MustAs[float32](out[0]))
}

// The float64 Conv (plain loops) and W given as an input rather than a
// constant (packed for each run) agree with the reference too.
func TestConvFloat64AndVariableW(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	cs := convCase{n: 2, c: 4, m: 6, group: 2, in: []int{6, 5}, k: []int{3, 2}, s: []int{2, 1}, d: []int{1, 2}, pad: []int{1, 0, 0, 1}, bias: true}
	x, w, b := randF32(r, 2, 4, 6, 5), randF32(r, 6, 2, 3, 2), randF32(r, 6)
	_, want, mag := refConv(cs, nd.Float64s(x), nd.Float64s(w), nd.Float64s(b))
	attrs := []*onnxpb.AttributeProto{onnxtest.Ints("strides", 2, 1), onnxtest.Ints("dilations", 1, 2), onnxtest.Ints("pads", 1, 0, 0, 1), onnxtest.Int("group", 2)}
	x64, _ := nd.Convert(x, nd.Float64)
	w64, _ := nd.Convert(w, nd.Float64)
	b64, _ := nd.Convert(b, nd.Float64)
	out := mustRun(t, 11, "Conv", []nd.Array{x64, w64, b64}, []bool{false, true, true}, []string{"y"}, attrs...)
	assert.Equal(t, nd.Float64, out[0].Type)
	requireClose(t, want, out[0], 1e-12, mag)
	m, err := onnxtest.Load(opModel(11, "Conv", []nd.Array{x, w, b}, nil, []string{"y"}, attrs...))
	require.NoError(t, err)
	for range 2 { // the second run must not reuse the first's W
		out, err := m.Run([]nd.Array{x, w, b})
		require.NoError(t, err)
		requireClose(t, want, out[0], 1e-5, mag)
		w = randF32(r, 6, 2, 3, 2)
		_, want, mag = refConv(cs, nd.Float64s(x), nd.Float64s(w), nd.Float64s(b))
	}
}

// Bad Convs are refused at load or when planned, saying what is wrong.
func TestConvErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	x := randF32(r, 1, 6, 5, 5)
	for name, tc := range map[string]struct {
		in    []nd.Array
		attrs []*onnxpb.AttributeProto
		want  string
	}{
		"channels vs groups": {[]nd.Array{x, randF32(r, 4, 4, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Int("group", 2)},
			"input X has 6 channels, W takes 4 per group x 2 groups = 8"},
		"output channels vs groups": {[]nd.Array{x, randF32(r, 5, 2, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Int("group", 3)},
			"W has 5 output channels, not a multiple of group 3"},
		"kernel larger than the padded input": {[]nd.Array{x, randF32(r, 2, 6, 7, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 0, 0, 1, 0)},
			"spatial axis 0: the window (kernel 7, dilation 1: 7 wide) is larger than the padded input (5 + pads 0 and 1)"},
		"dilated kernel larger": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("dilations", 1, 3)},
			"spatial axis 1: the window (kernel 3, dilation 3: 7 wide) is larger than the padded input (5 + pads 0 and 0)"},
		"odd pads": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 1, 1, 1)},
			"attribute pads has 3 values, want 2 per spatial axis"},
		"pads for 1 axis": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 1, 1)},
			"attribute pads has 2 values, want 4 for 2 spatial axes"},
		"pads vs kernel_shape": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 3, 3), onnxtest.Ints("pads", 1, 1)},
			"attribute pads has 2 values, want 4 for 2 spatial axes"},
		"kernel_shape vs W": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 3, 2)},
			"attribute kernel_shape [3 2] disagrees with W's shape [2x6x3x3]"},
		"negative pads": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 1, -1, 1, 1)},
			"attribute pads is [1 -1 1 1]: each value must be at least 0"},
		"zero stride": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("strides", 1, 0)},
			"attribute strides is [1 0]: each value must be at least 1"},
		"pads with auto_pad": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 1, 1, 1, 1), onnxtest.String("auto_pad", "SAME_UPPER")},
			"attribute pads [1 1 1 1] cannot be given with auto_pad SAME_UPPER"},
		"bad auto_pad": {[]nd.Array{x, randF32(r, 2, 6, 3, 3)}, []*onnxpb.AttributeProto{onnxtest.String("auto_pad", "SAME")},
			`attribute auto_pad is "SAME", want one of NOTSET, SAME_UPPER, SAME_LOWER, VALID`},
		"bias shape": {[]nd.Array{x, randF32(r, 2, 6, 3, 3), randF32(r, 3)}, nil,
			"input B has shape [3], want [2] (W's output channels)"},
		"W rank": {[]nd.Array{x, randF32(r, 2, 6, 3)}, nil,
			"input W has shape [2x6x3], X [1x6x5x5]: want W of rank 4"},
		"types": {[]nd.Array{x, nd.Zeros(nd.Float64, 2, 6, 3, 3)}, nil,
			"input X float32, W float64: want one type"},
	} {
		t.Run(name, func(t *testing.T) {
			err := loadErr(11, "Conv", tc.in, []bool{false, true, true}, []string{"y"}, tc.attrs...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Runs of one model from several goroutines share its packed weights (made
// by whichever run comes first) and agree with the reference.
func TestConvConcurrentRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	cs := convCase{n: 2, c: 64, m: 16, group: 1, in: []int{9, 9}, k: []int{3, 3}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{1, 1, 1, 1}, bias: true}
	x, w, b := randF32(r, 2, 64, 9, 9), randF32(r, 16, 64, 3, 3), randF32(r, 16)
	_, want, mag := refConv(cs, nd.Float64s(x), nd.Float64s(w), nd.Float64s(b))
	m, err := onnxtest.Load(opModel(11, "Conv", []nd.Array{x, w, b}, []bool{false, true, true}, []string{"y"}, onnxtest.Ints("pads", 1, 1, 1, 1)))
	require.NoError(t, err)
	errs := make(chan error, 4)
	outs := make(chan nd.Array, 12)
	for range 4 {
		go func() {
			for range 3 {
				out, err := m.Run([]nd.Array{x})
				if err != nil {
					errs <- err
					return
				}
				outs <- out[0]
			}
			errs <- nil
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	close(outs)
	for out := range outs {
		requireClose(t, want, out, 1e-5, mag)
	}
}

// Empty sizes compute nothing, or the bias alone (no input channels), and
// never fail; a kernel of size 0 is refused.
func TestConvEmpty(t *testing.T) {
	out := mustRun(t, 11, "Conv", []nd.Array{nd.Zeros(nd.Float32, 0, 2, 4, 4), nd.Zeros(nd.Float32, 3, 2, 3, 3)}, []bool{false, true}, []string{"y"})
	assert.Equal(t, []int{0, 3, 2, 2}, out[0].Shape)
	out = mustRun(t, 11, "Conv", []nd.Array{nd.Zeros(nd.Float32, 1, 0, 3, 3), nd.Zeros(nd.Float32, 2, 0, 2, 2), nd.Of([]float32{1, 2})}, []bool{false, true, true}, []string{"y"})
	assert.Equal(t, []float32{1, 1, 1, 1, 2, 2, 2, 2}, nd.MustAs[float32](out[0]))
	out = mustRun(t, 11, "Conv", []nd.Array{nd.Zeros(nd.Float32, 1, 2, 3, 3), nd.Zeros(nd.Float32, 0, 2, 2, 2)}, []bool{false, true}, []string{"y"})
	assert.Equal(t, []int{1, 0, 2, 2}, out[0].Shape)
	err := loadErr(11, "Conv", []nd.Array{nd.Zeros(nd.Float32, 1, 2, 3, 3), nd.Zeros(nd.Float32, 1, 2, 0, 2)}, []bool{false, true}, []string{"y"})
	assert.ErrorContains(t, err, "input W has shape [1x2x0x2]: kernel sizes must be at least 1")
}
