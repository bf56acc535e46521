package onnx_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refLayerNorm normalises x (shape xs) over the axes from axis, with
// scale and bias broadcast to xs (bias nil: none); it returns y, and the
// rows' means and inverse standard deviations.
func refLayerNorm(x []float64, xs []int, axis int, scale []float64, ss []int, bias []float64, bs []int, eps float64) (y, mean, inv []float64) {
	rows, size := numelOf(xs[:axis]), numelOf(xs[axis:])
	y = make([]float64, len(x))
	idx := make([]int, len(xs))
	at := func(v []float64, vs []int) float64 { // v's element under X's index idx
		o := 0
		for j, d := range vs {
			i := idx[len(xs)-len(vs)+j]
			if d == 1 {
				i = 0
			}
			o = o*d + i
		}
		return v[o]
	}
	for r := range rows {
		var s, q float64
		for _, v := range x[r*size : (r+1)*size] {
			s += v
		}
		mu := s / float64(size)
		for _, v := range x[r*size : (r+1)*size] {
			q += (v - mu) * (v - mu)
		}
		iv := 1 / math.Sqrt(q/float64(size)+eps)
		mean, inv = append(mean, mu), append(inv, iv)
		for i := r * size; i < (r+1)*size; i++ {
			unflat(i, xs, idx)
			y[i] = (x[i] - mu) * iv * at(scale, ss)
			if bias != nil {
				y[i] += at(bias, bs)
			}
		}
	}
	return y, mean, inv
}

// LayerNormalization over the last three axes of a 4-D X (axis 1), with
// Scale and B of the normalised shape or broadcast to it, without B, in
// float64, and its Mean and InvStdDev outputs.
func TestLayerNormalization(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	xs := []int{2, 3, 4, 5}
	for _, tc := range []struct {
		name   string
		axis   int
		ss, bs []int // nil bs: no B
	}{
		{"axis1", 1, []int{3, 4, 5}, []int{3, 4, 5}},
		{"axis1_broadcast", 1, []int{3, 1, 1}, []int{5}},
		{"axis1_scalar_scale", 1, []int{1}, []int{4, 1}},
		{"axis1_full_scale", 1, []int{2, 3, 4, 5}, []int{1, 3, 4, 5}},
		{"axis-1_noB", -1, []int{5}, nil},
		{"axis0", 0, []int{2, 3, 4, 5}, []int{5}},
		{"axis3", 3, []int{5}, []int{5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, scale := randF32(r, xs...), randF32(r, tc.ss...)
			in := []nd.Array{x, scale}
			var bias []float64
			if tc.bs != nil {
				b := randF32(r, tc.bs...)
				in = append(in, b)
				bias = nd.Float64s(b)
			}
			axis := tc.axis
			if axis < 0 {
				axis += len(xs)
			}
			wantY, wantMean, wantInv := refLayerNorm(nd.Float64s(x), xs, axis, nd.Float64s(scale), tc.ss, bias, tc.bs, 1e-3)
			out := mustRun(t, 17, "LayerNormalization", in, []bool{false, true, true}, []string{"y", "mean:float32", "inv:float32"},
				onnxtest.Int("axis", int64(tc.axis)), onnxtest.Float("epsilon", 1e-3))
			require.Len(t, out, 3)
			requireClose(t, wantY, out[0], 1e-5, nil)
			stat := append([]int{}, xs...)
			for i := axis; i < len(stat); i++ {
				stat[i] = 1
			}
			assert.Equal(t, stat, out[1].Shape)
			assert.Equal(t, nd.Float32, out[1].Type)
			requireClose(t, wantMean, out[1], 1e-6, nil)
			requireClose(t, wantInv, out[2], 1e-5, nil)
			x64, _ := nd.Convert(x, nd.Float64)
			in64 := []nd.Array{x64}
			for _, a := range in[1:] {
				c, _ := nd.Convert(a, nd.Float64)
				in64 = append(in64, c)
			}
			out = mustRun(t, 17, "LayerNormalization", in64, nil, []string{"y"}, onnxtest.Int("axis", int64(tc.axis)), onnxtest.Float("epsilon", 1e-3))
			assert.Equal(t, nd.Float64, out[0].Type)
			requireClose(t, wantY, out[0], 1e-7, nil) // epsilon is a float32 attribute
		})
	}
	x := randF32(r, xs...)
	err := loadErr(17, "LayerNormalization", []nd.Array{x, randF32(r, 4)}, nil, []string{"y"})
	assert.ErrorContains(t, err, "input Scale has shape [4], which does not broadcast to X's [2x3x4x5]")
	err = loadErr(17, "LayerNormalization", []nd.Array{x, randF32(r, 5)}, nil, []string{"y"}, onnxtest.Int("axis", 4))
	assert.ErrorContains(t, err, "axis 4 is out of range for rank 4")
	err = loadErr(17, "LayerNormalization", []nd.Array{x, randF32(r, 5)}, nil, []string{"y"}, onnxtest.Int("stash_type", 11))
	assert.ErrorContains(t, err, "attribute stash_type is 11: only 1 (float) is supported")
}

// refBatchNorm is (x - mean) / sqrt(var + eps) * scale + b over n x c
// planes of inner elements, the parameters per channel (per == 1) or per
// activation (per == inner).
func refBatchNorm(x []float64, n, c, inner, per int, scale, b, mean, variance []float64, eps float64) []float64 {
	y := make([]float64, len(x))
	for i := range x {
		ch, e := i/inner%c, i%inner
		j := ch*per + e%per
		y[i] = (x[i]-mean[j])/math.Sqrt(variance[j]+eps)*scale[j] + b[j]
	}
	return y
}

// BatchNormalization's old forms: spatial=0 (statistics per activation),
// is_test and consumed_inputs; 15's parameters of another type than X.
func TestBatchNormOldForms(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	x := randF32(r, 2, 3, 4, 5)
	pos := func(shape ...int) nd.Array { return absArray(randF32(r, shape...)) }
	params := func(shape ...int) []nd.Array {
		return []nd.Array{randF32(r, shape...), randF32(r, shape...), randF32(r, shape...), pos(shape...)}
	}
	f64 := func(a []nd.Array) [][]float64 {
		var out [][]float64
		for _, p := range a {
			out = append(out, nd.Float64s(p))
		}
		return out
	}
	// spatial=0 (opsets 1 to 7): parameters C x H x W.
	p := params(3, 4, 5)
	v := f64(p)
	want := refBatchNorm(nd.Float64s(x), 2, 3, 20, 20, v[0], v[1], v[2], v[3], 1e-2)
	for _, opset := range []int{6, 7} {
		out := mustRun(t, opset, "BatchNormalization", append([]nd.Array{x}, p...), []bool{false, true, true, true, true}, []string{"y"},
			onnxtest.Int("spatial", 0), onnxtest.Float("epsilon", 1e-2))
		requireClose(t, want, out[0], 1e-5, nil)
	}
	err := loadErr(9, "BatchNormalization", append([]nd.Array{x}, p...), nil, []string{"y"}, onnxtest.Int("spatial", 0))
	assert.ErrorContains(t, err, "attribute spatial is not supported")
	// opset 1: consumed_inputs and is_test read.
	p = params(3)
	v = f64(p)
	want = refBatchNorm(nd.Float64s(x), 2, 3, 20, 1, v[0], v[1], v[2], v[3], 1e-5)
	out := mustRun(t, 1, "BatchNormalization", append([]nd.Array{x}, p...), nil, []string{"y"},
		onnxtest.Ints("consumed_inputs", 0, 0, 0, 1, 1), onnxtest.Int("is_test", 1))
	requireClose(t, want, out[0], 1e-5, nil)
	// opset 15: X float64, scale and B float32, mean and var float64.
	x64, _ := nd.Convert(x, nd.Float64)
	m64, _ := nd.Convert(p[2], nd.Float64)
	v64, _ := nd.Convert(p[3], nd.Float64)
	out = mustRun(t, 15, "BatchNormalization", []nd.Array{x64, p[0], p[1], m64, v64}, nil, []string{"y"})
	assert.Equal(t, nd.Float64, out[0].Type)
	requireClose(t, want, out[0], 1e-6, nil)
	err = loadErr(14, "BatchNormalization", []nd.Array{x64, p[0], p[1], m64, v64}, nil, []string{"y"})
	assert.ErrorContains(t, err, "input X is float64, scale float32: in opset 14 they have one type")
	// A rank-2 X (N x C).
	x2 := randF32(r, 4, 3)
	want = refBatchNorm(nd.Float64s(x2), 4, 3, 1, 1, v[0], v[1], v[2], v[3], 1e-5)
	out = mustRun(t, 15, "BatchNormalization", append([]nd.Array{x2}, p...), nil, []string{"y"})
	requireClose(t, want, out[0], 1e-5, nil)
}

// BatchNormalization in training mode: 14's training_mode with its
// running statistics, and before 14 the five outputs (running mean and
// variance, then the batch's).
func TestBatchNormTraining(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	x := randF32(r, 3, 2, 4, 3)
	xs := nd.Float64s(x)
	s, b, mean, variance := randF32(r, 2), randF32(r, 2), randF32(r, 2), absArray(randF32(r, 2))
	var bm, bv [2]float64
	for i, v := range xs {
		bm[i/12%2] += v / 36
	}
	for i, v := range xs {
		d := v - bm[i/12%2]
		bv[i/12%2] += d * d / 36
	}
	mom := 0.8
	var rm, rv []float64
	for c := range 2 {
		rm = append(rm, nd.Float64s(mean)[c]*mom+bm[c]*(1-mom))
		rv = append(rv, nd.Float64s(variance)[c]*mom+bv[c]*(1-mom))
	}
	wantY := refBatchNorm(xs, 3, 2, 12, 1, nd.Float64s(s), nd.Float64s(b), bm[:], bv[:], 1e-5)
	in := []nd.Array{x, s, b, mean, variance}
	out := mustRun(t, 15, "BatchNormalization", in, nil, []string{"y", "rm", "rv"}, onnxtest.Int("training_mode", 1), onnxtest.Float("momentum", 0.8))
	requireClose(t, wantY, out[0], 1e-5, nil)
	requireClose(t, rm, out[1], 1e-6, nil)
	requireClose(t, rv, out[2], 1e-6, nil)
	out = mustRun(t, 9, "BatchNormalization", in, nil, []string{"y", "rm", "rv", "sm", "sv"}, onnxtest.Float("momentum", 0.8))
	require.Len(t, out, 5)
	requireClose(t, wantY, out[0], 1e-5, nil)
	requireClose(t, rm, out[1], 1e-6, nil)
	requireClose(t, rv, out[2], 1e-6, nil)
	requireClose(t, bm[:], out[3], 1e-6, nil)
	requireClose(t, bv[:], out[4], 1e-6, nil)
	// training_mode=1 with Y alone: normalised by the batch's statistics.
	out = mustRun(t, 14, "BatchNormalization", in, nil, []string{"y"}, onnxtest.Int("training_mode", 1))
	requireClose(t, wantY, out[0], 1e-5, nil)
	err := loadErr(15, "BatchNormalization", in, nil, []string{"y", "rm", "rv"})
	assert.ErrorContains(t, err, "outputs running_mean and running_var are only computed with training_mode=1")
	err = loadErr(6, "BatchNormalization", in, nil, []string{"y", "rm", "rv", "sm", "sv"}, onnxtest.Int("is_test", 1))
	assert.ErrorContains(t, err, "is_test=1, but the training outputs")
	err = loadErr(15, "BatchNormalization", []nd.Array{x, randF32(r, 3), b, mean, variance}, nil, []string{"y"})
	assert.ErrorContains(t, err, "input scale has shape [3], want [2] (X's channels)")
}
