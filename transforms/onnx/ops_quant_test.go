package onnx_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// QuantizeLinear rounds half to even and saturates to its type's range;
// NaN becomes the zero point.
func TestQuantizeLinearRounding(t *testing.T) {
	nan := float32(math.NaN())
	x := nd.Of([]float32{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 300, -300, nan}, 10)
	out := mustRun(t, 13, "QuantizeLinear", []nd.Array{x, nd.Scalar[float32](1), nd.Scalar[int8](0)}, []bool{false, true, true}, []string{"y:int8"})
	assert.Equal(t, []int8{-2, -2, 0, 0, 2, 2, 4, 127, -128, 0}, nd.MustAs[int8](out[0]))
	// Scale 2, zero point 128: x / 2 = -1.25 ... rounded, shifted, clamped to [0, 255].
	out = mustRun(t, 13, "QuantizeLinear", []nd.Array{x, nd.Scalar[float32](2), nd.Scalar[uint8](128)}, []bool{false, true, true}, []string{"y:uint8"})
	assert.Equal(t, []uint8{127, 127, 128, 128, 129, 129, 130, 255, 0, 128}, nd.MustAs[uint8](out[0]))
	// Without a zero point: uint8, zero point 0.
	out = mustRun(t, 10, "QuantizeLinear", []nd.Array{x, nd.Scalar[float32](1)}, []bool{false, true}, []string{"y:uint8"})
	assert.Equal(t, []uint8{0, 0, 0, 0, 2, 2, 4, 255, 0, 0}, nd.MustAs[uint8](out[0]))
	// int32 x (opset 10's T1).
	out = mustRun(t, 13, "QuantizeLinear", []nd.Array{nd.Of([]int32{-7, 5, 1000}, 3), nd.Scalar[float32](2), nd.Scalar[int8](1)}, []bool{false, true, true}, []string{"y:int8"})
	assert.Equal(t, []int8{-3, 3, 127}, nd.MustAs[int8](out[0]))
}

// Per-axis QuantizeLinear then DequantizeLinear gives x back to within half
// a scale, each index of the axis with its own scale and zero point.
func TestQuantizePerAxis(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := randF32(r, 2, 3, 4)
	scale := nd.Of([]float32{0.01, 0.02, 0.5}, 3)
	zp := nd.Of([]uint8{100, 128, 3}, 3)
	for _, axis := range []int64{1, -2} {
		q := mustRun(t, 13, "QuantizeLinear", []nd.Array{x, scale, zp}, []bool{false, true, true}, []string{"y:uint8"}, onnxtest.Int("axis", axis))
		y := mustRun(t, 13, "DequantizeLinear", []nd.Array{q[0], scale, zp}, []bool{false, true, true}, []string{"y:float32"}, onnxtest.Int("axis", axis))
		xs, qs, ys := nd.MustAs[float32](x), nd.MustAs[uint8](q[0]), nd.MustAs[float32](y[0])
		sc, zs := nd.MustAs[float32](scale), nd.MustAs[uint8](zp)
		for i := range xs {
			c := i / 4 % 3
			want := math.RoundToEven(float64(xs[i]/sc[c])) + float64(zs[c])
			want = min(255, max(0, want))
			require.Equal(t, uint8(want), qs[i], "element %d", i)
			require.Equal(t, float32(int32(qs[i])-int32(zs[c]))*sc[c], ys[i], "element %d", i)
		}
	}
	// int32 (a bias) dequantizes per axis with zero point 0.
	y := mustRun(t, 13, "DequantizeLinear", []nd.Array{nd.Of([]int32{-3, 4, 1 << 20}, 3), nd.Of([]float32{0.5, 0.25, 2}, 3)}, []bool{false, true}, []string{"y:float32"}, onnxtest.Int("axis", 0))
	assert.Equal(t, []float32{-1.5, 1, 1 << 21}, nd.MustAs[float32](y[0]))
}

// Bad scales and zero points are refused: at load, naming the node and the
// input, when they are initializers; when the node runs when they are not.
func TestQuantBadInput(t *testing.T) {
	x := nd.Of([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	q := nd.Of([]uint8{1, 2, 3, 4, 5, 6}, 2, 3)
	for name, c := range map[string]struct {
		op     string
		in     []nd.Array
		want   string
		atLoad bool // the values' error, at load
	}{
		"zero scale":         {"QuantizeLinear", []nd.Array{x, nd.Scalar[float32](0), nd.Scalar[uint8](0)}, "input y_scale: element 0 is 0: a scale must be positive and finite", true},
		"negative scale":     {"DequantizeLinear", []nd.Array{q, nd.Scalar[float32](-1), nd.Scalar[uint8](0)}, "input x_scale: element 0 is -1: a scale must be positive", true},
		"NaN scale":          {"DequantizeLinear", []nd.Array{q, nd.Of([]float32{1, float32(math.NaN()), 1}, 3), nd.Of([]uint8{0, 0, 0}, 3)}, "input x_scale: element 1 is NaN", true},
		"infinite scale":     {"QuantizeLinear", []nd.Array{x, nd.Scalar(float32(math.Inf(1))), nd.Scalar[uint8](0)}, "element 0 is +Inf: a scale must be positive and finite", true},
		"per-axis length":    {"QuantizeLinear", []nd.Array{x, nd.Of([]float32{1, 1}, 2), nd.Of([]uint8{0, 0}, 2)}, "input y_scale has shape [2]: want a scalar or 1 element (per tensor), or 3 (per axis: the axis's length)", false},
		"zero point's shape": {"QuantizeLinear", []nd.Array{x, nd.Of([]float32{1, 1, 1}, 3), nd.Scalar[uint8](0)}, "input y_zero_point has shape [], y_scale [3]: want one zero point per scale", false},
		"zero point's type":  {"QuantizeLinear", []nd.Array{x, nd.Scalar[float32](1), nd.Scalar[int32](0)}, "input y_zero_point is int32: zero points are int8 or uint8", false},
		"int32 zero point":   {"DequantizeLinear", []nd.Array{nd.Of([]int32{1}, 1), nd.Scalar[float32](1), nd.Scalar[int32](3)}, "input x_zero_point: element 0 is 3: int32 x (a quantized bias) takes a zero point of 0", false},
		"x's type":           {"DequantizeLinear", []nd.Array{x, nd.Scalar[float32](1)}, "input x is float32: DequantizeLinear takes int8, uint8 or int32", false},
	} {
		t.Run(name, func(t *testing.T) {
			// The scale and zero point initializers: refused at load.
			outType := ":uint8"
			if c.op == "DequantizeLinear" {
				outType = ":float32"
			} else if c.in[2].Type == nd.Int8 {
				outType = ":int8"
			}
			consts := []bool{false, true, true}
			_, err := onnxtest.Load(opModel(13, c.op, c.in, consts, []string{"y" + outType}, onnxtest.Int("axis", 1)))
			if c.atLoad {
				require.Error(t, err, "a bad value is refused at load")
			} else if err == nil {
				// Types and shapes are checked when the node is planned.
				err = loadErr(13, c.op, c.in, consts, []string{"y" + outType}, onnxtest.Int("axis", 1))
			}
			require.Error(t, err)
			assert.ErrorContains(t, err, c.want)
			assert.ErrorContains(t, err, `node "`+c.op+`_[y]" (`+c.op+`, opset 13)`)
			// Fed at run time: refused when the node runs.
			err = loadErr(13, c.op, c.in, nil, []string{"y" + outType}, onnxtest.Int("axis", 1))
			assert.ErrorContains(t, err, c.want)
		})
	}
	// Opset 10 has no per-axis quantization.
	err := loadErr(10, "QuantizeLinear", []nd.Array{x, nd.Of([]float32{1, 1, 1}, 3), nd.Of([]uint8{0, 0, 0}, 3)}, []bool{false, true, true}, []string{"y:uint8"})
	assert.ErrorContains(t, err, "input y_scale has shape [3]: want a scalar or 1 element (per tensor)")
	// Opset 21's blocked quantization.
	err = loadErr(21, "DequantizeLinear", []nd.Array{q, nd.Scalar[float32](1)}, []bool{false, true}, []string{"y:float32"}, onnxtest.Int("block_size", 2))
	assert.ErrorContains(t, err, "attribute block_size is 2: opset 21's blocked quantization is not supported")
	// block_size 0 is per tensor or per axis, as before opset 21.
	out := mustRun(t, 21, "DequantizeLinear", []nd.Array{q, nd.Scalar[float32](2)}, []bool{false, true}, []string{"y:float32"}, onnxtest.Int("block_size", 0))
	assert.Equal(t, []float32{2, 4, 6, 8, 10, 12}, nd.MustAs[float32](out[0]))
}

// A uint8 zero point of 300 in a tensor's int32_data is refused when the
// model is read, naming the node and the initializer, not wrapped to 44.
func TestQuantZeroPointOutOfRange(t *testing.T) {
	mp := opModel(13, "DequantizeLinear", []nd.Array{nd.Of([]uint8{1}, 1), nd.Scalar[float32](1), nd.Scalar[uint8](0)}, []bool{false, true, true}, []string{"y:float32"})
	for _, init := range mp.Graph.Initializer {
		if init.GetName() == "in2" {
			init.RawData = nil
			init.Int32Data = []int32{300}
		}
	}
	data, err := proto.Marshal(mp)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "zp.onnx")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = onnxtest.LoadFile(path)
	assert.ErrorContains(t, err, `(DequantizeLinear) input 2: initializer "in2": element 0 of int32_data is 300, outside uint8's range [0, 255]`)
}

// DynamicQuantizeLinear of all zeros has scale 1 (ONNX Runtime's; ONNX's
// formula divides by 0), and a NaN is refused.
func TestDynamicQuantizeLinearEdges(t *testing.T) {
	out := mustRun(t, 11, "DynamicQuantizeLinear", []nd.Array{nd.Zeros(nd.Float32, 3)}, nil, []string{"y:uint8", "s:float32", "z:uint8"})
	assert.Equal(t, []uint8{0, 0, 0}, nd.MustAs[uint8](out[0]))
	assert.Equal(t, []float32{1}, nd.MustAs[float32](out[1]))
	assert.Equal(t, []uint8{0}, nd.MustAs[uint8](out[2]))
	err := loadErr(11, "DynamicQuantizeLinear", []nd.Array{nd.Of([]float32{1, float32(math.NaN())}, 2)}, nil, []string{"y:uint8", "s:float32", "z:uint8"})
	assert.ErrorContains(t, err, "input x: element 1 is NaN")
}

// randQuant is an array of int8 or uint8 values, uniform over the type, the
// first ones the type's extremes.
func randQuant(r *rand.Rand, t nd.DType, shape ...int) nd.Array {
	n := numelOf(shape)
	if t == nd.Int8 {
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(r.IntN(256) - 128)
		}
		v[0] = -128
		return nd.Of(v, shape...)
	}
	v := make([]uint8, n)
	for i := range v {
		v[i] = uint8(r.IntN(256))
	}
	v[0] = 255
	return nd.Of(v, shape...)
}

// setExtremes sets the values v[0], v[step], ... (n of them) of v to one
// extreme of its type and zp[0] to the other.
func setExtremes(v, zp nd.Array, n, step int) {
	lo, hi := byte(0), byte(255) // uint8
	if v.Type == nd.Int8 {
		lo, hi = 0x80, 0x7f // -128, 127
	}
	for i := range n {
		v.Data[i*step] = hi
	}
	zp.Data[0] = lo
}

func ints64(a nd.Array) []int64 {
	v, err := nd.Int64s(a)
	if err != nil {
		panic(err)
	}
	return v
}

// requant is QLinear's requantization by the test's reference.
func requant(acc int64, mult float32, zp int64, signed bool) int64 {
	r := int64(math.RoundToEven(float64(float32(acc)*mult))) + zp
	if signed {
		return min(127, max(-128, r))
	}
	return min(255, max(0, r))
}

// MatMulInteger and QLinearMatMul equal integer sums computed here, with K
// past one float32 product's exact run (256 terms), the extremes of the
// types (sums past 2^24), batches, per-row and per-column zero points and
// scales.
func TestQuantMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const B, M, K, N = 2, 5, 600, 7
	for _, types := range [][2]nd.DType{{nd.Uint8, nd.Int8}, {nd.Int8, nd.Uint8}, {nd.Uint8, nd.Uint8}} {
		a, b := randQuant(r, types[0], B, M, K), randQuant(r, types[1], K, N)
		azp := randQuant(r, types[0], M)
		bzp := randQuant(r, types[1], N)
		// A's first row and B's first column at one extreme of their type,
		// their zero points at the other: 600 terms of 255^2, a sum past
		// 2^24.
		setExtremes(a, azp, K, 1)
		setExtremes(b, bzp, 1, N)
		av, bv := ints64(a), ints64(b)
		az, bz := ints64(azp), ints64(bzp)
		out := mustRun(t, 10, "MatMulInteger", []nd.Array{a, b, azp, bzp}, []bool{false, true, true, true}, []string{"y:int32"})
		got := nd.MustAs[int32](out[0])
		require.Equal(t, []int{B, M, N}, out[0].Shape)
		acc := make([]int64, B*M*N)
		for bt := range B {
			for i := range M {
				for j := range N {
					var s int64
					for k := range K {
						s += (av[(bt*M+i)*K+k] - az[i]) * (bv[k*N+j] - bz[j])
					}
					acc[(bt*M+i)*N+j] = s
					require.Equal(t, s, int64(got[(bt*M+i)*N+j]), "types %v, [%d %d %d]", types, bt, i, j)
				}
			}
		}
		// QLinearMatMul: per-tensor a, per-column b, int8 output.
		as, ys := float32(0.02), float32(3)
		bs := make([]float32, N)
		for j := range bs {
			bs[j] = 0.01 * float32(j+1)
		}
		azp0 := nd.Array{Type: types[0], Shape: []int{}, Data: azp.Data[:1]} // per tensor: the first row's
		in := []nd.Array{a, nd.Scalar(as), azp0, b, nd.Of(bs, N), bzp, nd.Scalar(ys), nd.Scalar[int8](-5)}
		q := mustRun(t, 10, "QLinearMatMul", in, []bool{false, true, true, true, true, true, true, true}, []string{"y:int8"})
		qs := nd.MustAs[int8](q[0])
		for bt := range B {
			for i := range M {
				for j := range N {
					var s int64
					for k := range K {
						s += (av[(bt*M+i)*K+k] - az[0]) * (bv[k*N+j] - bz[j])
					}
					want := requant(s, as*bs[j]/ys, -5, true)
					require.Equal(t, want, int64(qs[(bt*M+i)*N+j]), "types %v, [%d %d %d]", types, bt, i, j)
				}
			}
		}
	}
}

// ConvInteger and QLinearConv equal a convolution of integers computed
// here: groups, strides, dilations, padding (x's zero point, adding
// nothing), per-channel W zero points and scales, K = 64 x 3 x 3 past 256.
func TestQuantConv(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type geo struct {
		n, c, h, w, m, k, stride, pad, dil, group int
	}
	for _, g := range []geo{
		{2, 64, 9, 7, 6, 3, 1, 1, 1, 1},
		{1, 8, 10, 10, 8, 3, 2, 1, 2, 2},
		{1, 16, 6, 6, 16, 3, 2, 1, 1, 16},
		{3, 12, 5, 5, 4, 1, 1, 0, 1, 1},
	} {
		x := randQuant(r, nd.Uint8, g.n, g.c, g.h, g.w)
		w := randQuant(r, nd.Int8, g.m, g.c/g.group, g.k, g.k)
		xzp := nd.Scalar[uint8](uint8(r.IntN(256)))
		wzp := randQuant(r, nd.Int8, g.m)
		if g.c == 64 {
			// The first image all 255 less a zero point of 0, output
			// channel 0's weights all 127 less -128: sums of 576 x 255^2,
			// past 2^24, and a W whose packed product takes several runs.
			xzp = nd.Scalar[uint8](0)
			setExtremes(x, xzp, g.c*g.h*g.w, 1)
			setExtremes(w, wzp, g.c/g.group*g.k*g.k, 1)
		}
		attrs := []*onnxpb.AttributeProto{onnxtest.Ints("strides", int64(g.stride), int64(g.stride)), onnxtest.Ints("pads", int64(g.pad), int64(g.pad), int64(g.pad), int64(g.pad)),
			onnxtest.Ints("dilations", int64(g.dil), int64(g.dil)), onnxtest.Int("group", int64(g.group))}
		out := mustRun(t, 10, "ConvInteger", []nd.Array{x, w, xzp, wzp}, []bool{false, true, true, true}, []string{"y:int32"}, attrs...)
		xv, wv, wz := ints64(x), ints64(w), ints64(wzp)
		xz := ints64(xzp)[0]
		ext := (g.k-1)*g.dil + 1
		oh, ow := (g.h+2*g.pad-ext)/g.stride+1, (g.w+2*g.pad-ext)/g.stride+1
		require.Equal(t, []int{g.n, g.m, oh, ow}, out[0].Shape)
		got := nd.MustAs[int32](out[0])
		cg, mg := g.c/g.group, g.m/g.group
		acc := make([]int64, len(got))
		for i := range got {
			img, m, p := i/(g.m*oh*ow), i/(oh*ow)%g.m, i%(oh*ow)
			y0, x0 := p/ow*g.stride-g.pad, p%ow*g.stride-g.pad
			var s int64
			for c := range cg {
				ch := m/mg*cg + c
				for ky := range g.k {
					for kx := range g.k {
						iy, ix := y0+ky*g.dil, x0+kx*g.dil
						if iy < 0 || iy >= g.h || ix < 0 || ix >= g.w {
							continue
						}
						s += (xv[((img*g.c+ch)*g.h+iy)*g.w+ix] - xz) * (wv[((m*cg+c)*g.k+ky)*g.k+kx] - wz[m])
					}
				}
			}
			acc[i] = s
			require.Equal(t, s, int64(got[i]), "geometry %+v, element %d", g, i)
		}
		// QLinearConv, with a bias and per-channel w scales.
		bias := make([]int32, g.m)
		ws := make([]float32, g.m)
		for m := range bias {
			bias[m] = int32(r.IntN(20001) - 10000)
			ws[m] = 0.001 * float32(m+1)
		}
		xs, ys := float32(0.05), float32(0.5)
		in := []nd.Array{x, nd.Scalar(xs), xzp, w, nd.Of(ws, g.m), wzp, nd.Scalar(ys), nd.Scalar[uint8](7), nd.Of(bias, g.m)}
		q := mustRun(t, 10, "QLinearConv", in, []bool{false, true, true, true, true, true, true, true, true}, []string{"y:uint8"}, attrs...)
		qs := nd.MustAs[uint8](q[0])
		for i := range qs {
			m := i / (oh * ow) % g.m
			require.Equal(t, requant(acc[i]+int64(bias[m]), xs*ws[m]/ys, 7, false), int64(qs[i]), "geometry %+v, element %d", g, i)
		}
	}
}

// The quantized operators' device kernels give the CPU's outputs on the
// emulated device: QLinearConv with groups, strides and padding, and
// QLinearMatMul with a batch and per-column scales; a scale that is 0 at
// run time is flagged for the CPU (ErrIndexRange), whose error names it.
func TestQuantDevice(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(7, 8))
	x, w := randQuant(r, nd.Uint8, 2, 8, 9, 9), randQuant(r, nd.Int8, 6, 4, 3, 3)
	ws := nd.Of([]float32{0.01, 0.02, 0.03, 0.04, 0.05, 0.06}, 6)
	conv := []nd.Array{x, nd.Scalar[float32](0.05), nd.Scalar[uint8](120), w, ws, randQuant(r, nd.Int8, 6),
		nd.Scalar[float32](0.7), nd.Scalar[uint8](9), nd.Of([]int32{-500, 0, 7, 1000, 20000, -3}, 6)}
	a, b := randQuant(r, nd.Int8, 3, 4, 300), randQuant(r, nd.Uint8, 300, 5)
	mm := []nd.Array{a, nd.Scalar[float32](0.02), nd.Scalar[int8](-3), b, nd.Of([]float32{0.01, 0.02, 0.03, 0.04, 0.05}, 5), randQuant(r, nd.Uint8, 5),
		nd.Scalar[float32](2), nd.Scalar[int8](4)}
	for _, c := range []struct {
		op    string
		in    []nd.Array
		out   string
		attrs []*onnxpb.AttributeProto
	}{
		{"QLinearConv", conv, "y:uint8", []*onnxpb.AttributeProto{onnxtest.Int("group", 2), onnxtest.Ints("strides", 2, 2), onnxtest.Ints("pads", 1, 0, 1, 2)}},
		{"ConvInteger", []nd.Array{x, w, conv[2], conv[5]}, "y:int32", []*onnxpb.AttributeProto{onnxtest.Int("group", 2)}},
		{"QLinearMatMul", mm, "y:int8", nil},
		{"MatMulInteger", []nd.Array{a, b, mm[2], mm[5]}, "y:int32", nil},
	} {
		m, err := onnxtest.Load(opModel(10, c.op, c.in, nil, []string{c.out}, c.attrs...))
		require.NoError(t, err)
		want, err := m.Run(c.in)
		require.NoError(t, err)
		got, onHost, err := runOnDevice(dev, m, c.in)
		require.NoError(t, err, c.op)
		assert.Empty(t, onHost, c.op)
		assert.Equal(t, want[0].Data, got[0].Data, c.op)
	}
	// A zero scale fed at run time.
	bad := append([]nd.Array{}, mm...)
	bad[6] = nd.Scalar[float32](0)
	m, err := onnxtest.Load(opModel(10, "QLinearMatMul", bad, nil, []string{"y:int8"}))
	require.NoError(t, err)
	_, _, err = runOnDevice(dev, m, bad)
	require.ErrorIs(t, err, onnx.ErrIndexRange)
	_, err = m.Run(bad)
	assert.ErrorContains(t, err, "input y_scale: element 0 is 0: a scale must be positive and finite")
}

// The quantized operators are in the op set (what a model may use).
func TestQuantOpsRegistered(t *testing.T) {
	have := map[string]bool{}
	for _, d := range onnx.Ops() {
		have[d.Name] = true
	}
	for _, op := range []string{"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "QLinearMatMul", "ConvInteger", "QLinearConv"} {
		assert.True(t, have[op], op)
	}
}

// ConvInteger and QLinearConv give the same values on the integer kernels
// (igemm and ubgemm, from the padded input's phase planes) as on the
// float32 ones, over the geometries the integer kernels take apart: 1-D,
// 2-D and 3-D, stride 1 with and without padding and dilation, strides of
// 2 and 3 and mixed, with dilation, kernels smaller than the stride,
// asymmetric and SAME_UPPER padding, groups and depthwise, 1x1 kernels, K
// odd, outputs in several chunks, int8 and uint8 X, W per tensor and per
// channel, of 8 bits (igemm) and 7 (ubgemm), constant and run-time.
func TestQuantConvIntKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	type geo struct {
		name  string
		x, w  []int
		group int
		attrs []*onnxpb.AttributeProto
	}
	pads2 := func(a, b, c, d int64) *onnxpb.AttributeProto { return onnxtest.Ints("pads", a, b, c, d) }
	for _, g := range []geo{
		{"3x3 pad 1", []int{2, 16, 23, 19}, []int{12, 16, 3, 3}, 1, []*onnxpb.AttributeProto{pads2(1, 1, 1, 1)}},
		{"3x3 no pad, K odd", []int{1, 3, 50, 41}, []int{5, 3, 3, 3}, 1, nil},
		{"dilation 2 pad 2 groups 2", []int{1, 8, 17, 13}, []int{6, 4, 3, 3}, 2, []*onnxpb.AttributeProto{pads2(2, 2, 2, 2), onnxtest.Ints("dilations", 2, 2)}},
		{"asymmetric pads", []int{1, 5, 9, 12}, []int{7, 5, 2, 3}, 1, []*onnxpb.AttributeProto{pads2(0, 2, 1, 0)}},
		{"SAME_UPPER", []int{1, 4, 8, 8}, []int{4, 4, 4, 4}, 1, []*onnxpb.AttributeProto{onnxtest.String("auto_pad", "SAME_UPPER")}},
		{"depthwise", []int{1, 8, 11, 11}, []int{8, 1, 3, 3}, 8, []*onnxpb.AttributeProto{pads2(1, 1, 1, 1)}},
		{"stride 2", []int{1, 6, 15, 14}, []int{9, 6, 3, 3}, 1, []*onnxpb.AttributeProto{pads2(1, 1, 1, 1), onnxtest.Ints("strides", 2, 2)}},
		{"1x1", []int{2, 20, 7, 9}, []int{10, 20, 1, 1}, 1, nil},
		{"1-D", []int{2, 6, 100}, []int{5, 6, 5}, 1, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 2, 1)}},
		{"3-D", []int{1, 3, 5, 6, 7}, []int{4, 3, 3, 3, 3}, 1, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 1, 1, 1, 1, 1, 1)}},
		{"stride 2 dilation 2", []int{1, 6, 17, 16}, []int{8, 6, 3, 3}, 1, []*onnxpb.AttributeProto{pads2(2, 1, 1, 2), onnxtest.Ints("strides", 2, 2), onnxtest.Ints("dilations", 2, 2)}},
		{"strides 3 and 1", []int{1, 4, 20, 11}, []int{4, 4, 3, 2}, 1, []*onnxpb.AttributeProto{pads2(0, 1, 2, 0), onnxtest.Ints("strides", 3, 1)}},
		{"1x1 stride 2", []int{1, 8, 9, 9}, []int{8, 8, 1, 1}, 1, []*onnxpb.AttributeProto{onnxtest.Ints("strides", 2, 2)}},
		{"stride 2 groups 2", []int{2, 8, 12, 13}, []int{8, 4, 3, 3}, 2, []*onnxpb.AttributeProto{pads2(1, 1, 1, 1), onnxtest.Ints("strides", 2, 2)}},
		{"1-D stride 2", []int{2, 6, 101}, []int{5, 6, 5}, 1, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 2, 2), onnxtest.Ints("strides", 2)}},
		{"3-D strides 2, 1, 2", []int{1, 3, 7, 6, 9}, []int{4, 3, 3, 3, 3}, 1, []*onnxpb.AttributeProto{onnxtest.Ints("pads", 1, 1, 1, 1, 1, 1), onnxtest.Ints("strides", 2, 1, 2)}},
	} {
		for _, xt := range []nd.DType{nd.Uint8, nd.Int8} {
			for _, c := range []struct {
				constW bool
				bits   int
			}{{true, 8}, {false, 8}, {true, 7}, {false, 7}} {
				constW := c.constW
				name := fmt.Sprintf("%s/%v/constW=%v/%d bits", g.name, xt, constW, c.bits)
				x := randQuant(r, xt, g.x...)
				w := randQuant(r, nd.Int8, g.w...)
				m := g.w[0]
				xz := nd.Zeros(xt)
				xz.Data[0] = byte(r.IntN(256))
				wz := randQuant(r, nd.Int8, m)
				if !constW {
					wz = nd.Scalar[int8](int8(r.IntN(256) - 128))
				}
				if c.bits == 7 { // ubgemm's weights: less their zero point, in [-64, 63]
					for i := range wz.Data {
						wz.Data[i] = byte(int8(r.IntN(9) - 4))
					}
					for i := range w.Data {
						z := int(int8(wz.Data[min(i/(len(w.Data)/m), len(wz.Data)-1)]))
						w.Data[i] = byte(int8([]int{-64, 63, -64 + r.IntN(128)}[r.IntN(3)] + z))
					}
				}
				attrs := append([]*onnxpb.AttributeProto{onnxtest.Int("group", int64(g.group))}, g.attrs...)
				run := func(ints bool) (nd.Array, nd.Array) {
					defer onnx.UseIntKernels(ints)()
					ci := mustRun(t, 10, "ConvInteger", []nd.Array{x, w, xz, wz}, []bool{false, constW, true, true}, []string{"y:int32"}, attrs...)
					ws := make([]float32, m)
					bias := make([]int32, m)
					for i := range ws {
						ws[i], bias[i] = 0.002*float32(i+1), int32(i*37-100)
					}
					in := []nd.Array{x, nd.Scalar[float32](0.03), xz, w, nd.Of(ws, m), wz, nd.Scalar[float32](0.4), nd.Scalar[int8](3), nd.Of(bias, m)}
					if !constW {
						in[4] = nd.Scalar[float32](0.002)
					}
					ql := mustRun(t, 10, "QLinearConv", in, []bool{false, true, true, constW, true, true, true, true, true}, []string{"y:int8"}, attrs...)
					return ci[0], ql[0]
				}
				wantI, wantQ := run(false)
				gotI, gotQ := run(true)
				assert.Equal(t, wantI, gotI, "%s: ConvInteger", name)
				assert.Equal(t, wantQ, gotQ, "%s: QLinearConv", name)
			}
		}
	}
}

// MatMulInteger and QLinearMatMul give the same values on the integer
// kernels as on the float32 ones: weights of 7 bits (ubgemm's kernel,
// its pairs within 128, at the edge of it too; int8, and uint8 about a
// zero point of 128) and of 8 (igemm's), A
// uint8 and int8 with its zero point per tensor or per row, B's per
// column, batches, M, N and K odd and across the kernels' blocks,
// constant and run-time B.
func TestQuantMatMulIntKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, s := range [][4]int{{1, 1, 1, 1}, {2, 5, 7, 3}, {1, 13, 300, 17}, {3, 8, 1027, 33}} {
		B, M, K, N := s[0], s[1], s[2], s[3]
		for _, at := range []nd.DType{nd.Uint8, nd.Int8} {
			for _, bits := range []int{7, 8, -7} { // -7: uint8 B, 7 bits about its zero point 128
				for _, constB := range []bool{true, false} {
					name := fmt.Sprintf("%v/%v/%d bits/constB=%v", s, at, bits, constB)
					a := randQuant(r, at, B, M, K)
					b := nd.Zeros(nd.Int8, K, N)
					bz := nd.Zeros(nd.Int8, N)
					if bits < 0 {
						b, bz = nd.Zeros(nd.Uint8, K, N), nd.Zeros(nd.Uint8, N)
						for j := range bz.Data {
							bz.Data[j] = 128
						}
					}
					for i := range b.Data {
						v := r.IntN(256) - 128
						if bits == 7 || bits == -7 {
							v = []int{-64, 63, -64 + r.IntN(128)}[r.IntN(3)]
						}
						if bits < 0 {
							v += 128
						}
						b.Data[i] = byte(v)
					}
					if bits == 8 {
						for j := range bz.Data {
							bz.Data[j] = byte(int8(r.IntN(256) - 128))
						}
					}
					azRow := randQuant(r, at, M)
					azOne := nd.Zeros(at)
					azOne.Data[0] = byte(r.IntN(256))
					bs := make([]float32, N)
					for j := range bs {
						bs[j] = 0.003 * float32(j+1)
					}
					run := func(ints bool) []nd.Array {
						defer onnx.UseIntKernels(ints)()
						var out []nd.Array
						for _, az := range []nd.Array{azOne, azRow} {
							out = append(out, mustRun(t, 10, "MatMulInteger", []nd.Array{a, b, az, bz}, []bool{false, constB, true, true}, []string{"y:int32"})[0])
						}
						in := []nd.Array{a, nd.Scalar[float32](0.02), azOne, b, nd.Of(bs, N), bz, nd.Scalar[float32](0.3), nd.Scalar[uint8](100)}
						out = append(out, mustRun(t, 10, "QLinearMatMul", in, []bool{false, true, true, constB, true, true, true, true}, []string{"y:uint8"})[0])
						return out
					}
					want, got := run(false), run(true)
					for i := range want {
						assert.Equal(t, want[i], got[i], "%s: output %d", name, i)
					}
				}
			}
		}
	}
}
