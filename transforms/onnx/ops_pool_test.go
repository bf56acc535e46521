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

// poolCase is a pooling window over planes of spatial size in.
type poolCase struct {
	in, k, s, d, pad []int
	ceil             bool
}

// refPool pools each of planes planes (written apart from the runtime's):
// the output's spatial shape, the maxima and their flat indices (row- or
// column-major within a plane), and the means (count_include_pad or not).
func refPool(pc poolCase, planes int, x []float64, colMajor, inclPad bool) (out []int, maxv []float64, idx []int64, mean []float64) {
	nsp := len(pc.in)
	for i := range nsp {
		ext := (pc.k[i]-1)*pc.d[i] + 1
		span := pc.in[i] + pc.pad[i] + pc.pad[nsp+i] - ext
		o := span/pc.s[i] + 1
		if pc.ceil && span%pc.s[i] != 0 {
			o++
			if (o-1)*pc.s[i] >= pc.in[i]+pc.pad[i] {
				o--
			}
		}
		out = append(out, o)
	}
	inSize, outSize := numelOf(pc.in), numelOf(out)
	opos, kpos, ipos := make([]int, nsp), make([]int, nsp), make([]int, nsp)
	for p := range planes {
		for o := range outSize {
			unflat(o, out, opos)
			best, at := math.Inf(-1), -1
			var sum float64
			count, padded := 0, 1
			for d := range nsp {
				start := opos[d]*pc.s[d] - pc.pad[d]
				padded *= min(start+pc.k[d], pc.in[d]+pc.pad[nsp+d]) - max(start, -pc.pad[d])
			}
			for kk := range numelOf(pc.k) {
				unflat(kk, pc.k, kpos)
				inside := true
				for d := range nsp {
					ipos[d] = opos[d]*pc.s[d] - pc.pad[d] + kpos[d]*pc.d[d]
					inside = inside && ipos[d] >= 0 && ipos[d] < pc.in[d]
				}
				if !inside {
					continue
				}
				flat, cflat, mul := 0, 0, 1
				for d := range nsp {
					flat = flat*pc.in[d] + ipos[d]
					cflat += ipos[d] * mul
					mul *= pc.in[d]
				}
				v := x[p*inSize+flat]
				if v > best {
					best, at = v, flat
					if colMajor {
						at = cflat
					}
				}
				sum += v
				count++
			}
			maxv = append(maxv, best)
			if at >= 0 {
				at += p * inSize
			}
			idx = append(idx, int64(at)) // -1: a window over padding alone
			if inclPad {
				count = padded
			}
			mean = append(mean, sum/float64(count))
		}
	}
	return out, maxv, idx, mean
}

func poolAttrs(pc poolCase, opset int) []*onnxpb.AttributeProto {
	attrs := []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", i64s(pc.k)...), onnxtest.Ints("strides", i64s(pc.s)...), onnxtest.Ints("pads", i64s(pc.pad)...)}
	if opset >= 10 {
		attrs = append(attrs, onnxtest.Int("ceil_mode", b2i(pc.ceil)))
	}
	return attrs
}

// MaxPool's maxima and Indices (row-major, and column-major with
// storage_order 1) and AveragePool's means (with and without
// count_include_pad) against direct pooling, on random 1-D to 3-D windows
// with strides, dilations (MaxPool), asymmetric pads and ceil_mode.
func TestPoolRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for trial := range 120 {
		nsp := 1 + trial%3
		var pc poolCase
		pc.ceil = r.IntN(2) == 0
		for range nsp {
			k := 1 + r.IntN(3)
			pc.in, pc.k, pc.s, pc.d = append(pc.in, 1+r.IntN(11-2*nsp)), append(pc.k, k), append(pc.s, 1+r.IntN(3)), append(pc.d, 1+r.IntN(2))
		}
		pc.pad = make([]int, 2*nsp)
		for i := range nsp {
			// Pads smaller than the kernel, as ONNX requires.
			pc.pad[i], pc.pad[nsp+i] = r.IntN(pc.k[i]), r.IntN(pc.k[i])
			for pc.in[i]+pc.pad[i]+pc.pad[nsp+i] < (pc.k[i]-1)*pc.d[i]+1 {
				pc.in[i]++
			}
		}
		n, c := 1+r.IntN(2), 1+r.IntN(3)
		x := randF32(r, append([]int{n, c}, pc.in...)...)
		t.Run(fmt.Sprintf("%d_%+v", trial, pc), func(t *testing.T) {
			for _, colMajor := range []bool{false, true} {
				out, maxv, idx, _ := refPool(pc, n*c, nd.Float64s(x), colMajor, false)
				attrs := append(poolAttrs(pc, 12), onnxtest.Ints("dilations", i64s(pc.d)...), onnxtest.Int("storage_order", b2i(colMajor)))
				got := mustRun(t, 12, "MaxPool", []nd.Array{x}, nil, []string{"y", "i:int64"}, attrs...)
				require.Equal(t, append([]int{n, c}, out...), got[0].Shape)
				assert.Equal(t, maxv, nd.Float64s(got[0]))
				assert.Equal(t, idx, nd.MustAs[int64](got[1]), "indices (column-major %t)", colMajor)
				// Without Indices (the vector kernel, where there is one).
				got = mustRun(t, 12, "MaxPool", []nd.Array{x}, nil, []string{"y"}, attrs...)
				assert.Equal(t, maxv, nd.Float64s(got[0]))
			}
			pc.d = nil
			for range nsp {
				pc.d = append(pc.d, 1)
			}
			for _, incl := range []bool{false, true} {
				out, _, _, mean := refPool(pc, n*c, nd.Float64s(x), false, incl)
				attrs := append(poolAttrs(pc, 11), onnxtest.Int("count_include_pad", b2i(incl)))
				got := mustRun(t, 11, "AveragePool", []nd.Array{x}, nil, []string{"y"}, attrs...)
				require.Equal(t, append([]int{n, c}, out...), got[0].Shape)
				requireClose(t, mean, got[0], 1e-6, nil)
			}
		})
	}
}

// MaxPool's Indices with storage_order 1 on a hand-made plane: the index
// of row h, column w of a 3 x 4 plane p is p*12 + h + w*3.
func TestMaxPoolIndicesColumnMajor(t *testing.T) {
	x := nd.Of([]float32{
		1, 9, 2, 3,
		4, 5, 8, 6,
		7, 0, 1, 2,

		0, 0, 0, 0,
		0, 0, 0, 5,
		0, 0, 0, 0,
	}, 1, 2, 3, 4)
	for _, tc := range []struct {
		order int64
		want  []int64
	}{
		{0, []int64{1, 6, 8, 6, 12 + 0, 12 + 7, 12 + 4, 12 + 7}},
		{1, []int64{3, 7, 2, 7, 12 + 0, 12 + 10, 12 + 1, 12 + 10}},
	} {
		out := mustRun(t, 12, "MaxPool", []nd.Array{x}, nil, []string{"y", "i:int64"},
			onnxtest.Ints("kernel_shape", 2, 2), onnxtest.Ints("strides", 1, 2), onnxtest.Int("storage_order", tc.order))
		assert.Equal(t, []float32{9, 8, 7, 8, 0, 5, 0, 5}, nd.MustAs[float32](out[0]))
		assert.Equal(t, tc.want, nd.MustAs[int64](out[1]), "storage_order %d", tc.order)
	}
}

// MaxPool of int8 and uint8 (opset 12), float64; AveragePool and
// GlobalAveragePool over 1 to 3 spatial axes.
func TestPoolTypes(t *testing.T) {
	x8 := nd.Of([]int8{-5, 3, -128, 127, 0, -1}, 1, 1, 6)
	out := mustRun(t, 12, "MaxPool", []nd.Array{x8}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 2), onnxtest.Ints("pads", 1, 1))
	assert.Equal(t, []int8{-5, 3, 3, 127, 127, 0, -1}, nd.MustAs[int8](out[0]))
	u8 := nd.Of([]uint8{5, 3, 200, 1}, 1, 1, 4)
	out = mustRun(t, 12, "MaxPool", []nd.Array{u8}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 3), onnxtest.Ints("pads", 1, 1))
	assert.Equal(t, []uint8{5, 200, 200, 200}, nd.MustAs[uint8](out[0]))
	err := loadErr(11, "MaxPool", []nd.Array{u8}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 3))
	assert.ErrorContains(t, err, "input X is uint8: want float32 or float64")
	f64 := nd.Of([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 1, 1, 2, 2, 2)
	out = mustRun(t, 12, "MaxPool", []nd.Array{f64}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 2, 2, 2))
	assert.Equal(t, []float64{8}, nd.MustAs[float64](out[0]))
	out = mustRun(t, 11, "AveragePool", []nd.Array{f64}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 1, 2, 2))
	assert.Equal(t, []float64{2.5, 6.5}, nd.MustAs[float64](out[0]))
	out = mustRun(t, 1, "GlobalAveragePool", []nd.Array{f64}, nil, []string{"y"})
	assert.Equal(t, []int{1, 1, 1, 1, 1}, out[0].Shape)
	assert.Equal(t, []float64{4.5}, nd.MustAs[float64](out[0]))
	// A NaN wins its windows, with or without Indices (NumPy's max), in
	// 1-D and 2-D.
	nan2 := nd.Of([]float32{1, 2, 3, float32(math.NaN()), 5, 6, 7, 8, 9}, 1, 1, 3, 3)
	out = mustRun(t, 12, "MaxPool", []nd.Array{nan2}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 2, 2))
	got2 := nd.MustAs[float32](out[0])
	assert.True(t, math.IsNaN(float64(got2[0])) && math.IsNaN(float64(got2[2])), "%v", got2)
	assert.Equal(t, []float32{6, 9}, []float32{got2[1], got2[3]})
	nan := nd.Of([]float32{1, float32(math.NaN()), 3, 4}, 1, 1, 4)
	for _, outs := range [][]string{{"y"}, {"y", "i:int64"}} {
		out = mustRun(t, 12, "MaxPool", []nd.Array{nan}, nil, outs, onnxtest.Ints("kernel_shape", 2))
		got := nd.MustAs[float32](out[0])
		assert.True(t, math.IsNaN(float64(got[0])) && math.IsNaN(float64(got[1])), "%v", got)
		assert.Equal(t, float32(4), got[2])
		if len(out) > 1 {
			assert.Equal(t, []int64{1, 1, 3}, nd.MustAs[int64](out[1]))
		}
	}
	x1 := nd.Of([]float32{1, 2, 3, 4, 10, 20, 30, 40}, 1, 2, 4)
	out = mustRun(t, 1, "GlobalAveragePool", []nd.Array{x1}, nil, []string{"y"})
	assert.Equal(t, []int{1, 2, 1}, out[0].Shape)
	assert.Equal(t, []float32{2.5, 25}, nd.MustAs[float32](out[0]))
}

// The pools' attributes by opset, auto_pad, and their errors.
func TestPoolOpsetsAndErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	x := randF32(r, 1, 2, 5, 5)
	// SAME_LOWER pads 1 before, SAME_UPPER 1 after (kernel 2, stride 1).
	for _, tc := range []struct {
		mode string
		pads []int
	}{{"SAME_LOWER", []int{1, 1, 0, 0}}, {"SAME_UPPER", []int{0, 0, 1, 1}}} {
		pc := poolCase{in: []int{5, 5}, k: []int{2, 2}, s: []int{1, 1}, d: []int{1, 1}, pad: tc.pads}
		_, maxv, _, mean := refPool(pc, 2, nd.Float64s(x), false, false)
		out := mustRun(t, 12, "MaxPool", []nd.Array{x}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 2, 2), onnxtest.String("auto_pad", tc.mode))
		assert.Equal(t, maxv, nd.Float64s(out[0]), tc.mode)
		out = mustRun(t, 7, "AveragePool", []nd.Array{x}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 2, 2), onnxtest.String("auto_pad", tc.mode))
		requireClose(t, mean, out[0], 1e-6, nil)
	}
	// Opset 1 forms: no count_include_pad, ceil_mode, storage_order, dilations.
	out := mustRun(t, 1, "AveragePool", []nd.Array{x}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 3, 3), onnxtest.Ints("pads", 1, 1, 1, 1))
	pc := poolCase{in: []int{5, 5}, k: []int{3, 3}, s: []int{1, 1}, d: []int{1, 1}, pad: []int{1, 1, 1, 1}}
	_, maxv, _, mean := refPool(pc, 2, nd.Float64s(x), false, false)
	requireClose(t, mean, out[0], 1e-6, nil)
	out = mustRun(t, 1, "MaxPool", []nd.Array{x}, nil, []string{"y"}, onnxtest.Ints("kernel_shape", 3, 3), onnxtest.Ints("pads", 1, 1, 1, 1))
	assert.Equal(t, maxv, nd.Float64s(out[0]))
	for name, tc := range map[string]struct {
		opset int
		op    string
		attrs []*onnxpb.AttributeProto
		outs  []string
		want  string
	}{
		"no kernel_shape":        {12, "MaxPool", nil, []string{"y"}, "attribute kernel_shape is required"},
		"kernel too large":       {12, "MaxPool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 6, 2)}, []string{"y"}, "spatial axis 0: the window (kernel 6, dilation 1: 6 wide) is larger than the padded input (5 + pads 0 and 0)"},
		"pads length":            {11, "AveragePool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 2, 2), onnxtest.Ints("pads", 1, 1)}, []string{"y"}, "attribute pads has 2 values, want 4 for 2 spatial axes"},
		"kernel rank":            {11, "AveragePool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 2)}, []string{"y"}, "input X has shape [1x2x5x5] (2 spatial axes), attribute kernel_shape [2]"},
		"count_include_pad at 1": {1, "AveragePool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 2, 2), onnxtest.Int("count_include_pad", 1)}, []string{"y"}, "attribute count_include_pad is not supported"},
		"ceil_mode at 8":         {8, "MaxPool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 2, 2), onnxtest.Int("ceil_mode", 1)}, []string{"y"}, "attribute ceil_mode is not supported"},
		"dilations at 8":         {8, "MaxPool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 2, 2), onnxtest.Ints("dilations", 1, 1)}, []string{"y"}, "attribute dilations is not supported"},
		"Indices at 1":           {1, "MaxPool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 2, 2)}, []string{"y", "i:int64"}, "2 outputs, want 1"},
		"storage_order 2":        {12, "MaxPool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 2, 2), onnxtest.Int("storage_order", 2)}, []string{"y"}, "attribute storage_order is 2, want 0 or 1"},
		"dilations on average":   {11, "AveragePool", []*onnxpb.AttributeProto{onnxtest.Ints("kernel_shape", 2, 2), onnxtest.Ints("dilations", 2, 2)}, []string{"y"}, "attribute dilations is not supported"},
	} {
		t.Run(name, func(t *testing.T) {
			err := loadErr(tc.opset, tc.op, []nd.Array{x}, nil, tc.outs, tc.attrs...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	err := loadErr(1, "GlobalAveragePool", []nd.Array{randF32(r, 3)}, nil, []string{"y"})
	assert.ErrorContains(t, err, "input X has shape [3]: want N x C [x D1 ...]")
}
