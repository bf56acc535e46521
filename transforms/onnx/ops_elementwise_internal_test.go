package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the elementwise, reduction and softmax kernels from inside the
// package: the fast float32 functions against math's, Cast's loops against
// nd.Convert, and the broadcasting and reduction loops against plain
// index arithmetic on random shapes.

// ewKernel makes op's kernel at opset with attrs, for inputs n.
func ewKernel(t testing.TB, op string, opset, n int, attrs ...*onnxpb.AttributeProto) Kernel {
	t.Helper()
	d, ok := lookupOp(op)
	require.True(t, ok, op)
	since, ok := d.since(opset)
	require.True(t, ok, "%s at opset %d", op, opset)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("in", i)
	}
	k, err := d.New(&Node{Op: op, Opset: opset, Since: since, Inputs: names, Outputs: []string{"y"}, Attrs: NewAttrs(attrs...)})
	require.NoError(t, err)
	return k
}

// ewEval infers and runs k on in (all known), returning its output.
func ewEval(k Kernel, in ...nd.Array) (nd.Array, error) {
	metas := make([]Meta, len(in))
	for i := range in {
		metas[i] = Meta{Type: in[i].Type, Shape: in[i].Shape, Value: &in[i]}
	}
	om, err := k.Infer(metas)
	if err != nil {
		return nd.Array{}, err
	}
	out, err := nd.New(om[0].Type, om[0].Shape...)
	if err != nil {
		return nd.Array{}, err
	}
	return out, k.Run(in, []nd.Array{out})
}

// ewRandF32 is an array of shape with values uniform in [-s, s).
func ewRandF32(r *rand.Rand, s float32, shape ...int) nd.Array {
	v := make([]float32, numel(shape))
	for i := range v {
		v[i] = s * (2*r.Float32() - 1)
	}
	return nd.Of(v, shape...)
}

// ewRandShape is a random shape of rank up to 4 with dimensions up to 5,
// and one that broadcasts with it (some dimensions 1, maybe fewer).
func ewRandShapes(r *rand.Rand) (a, b []int) {
	rank := r.IntN(5)
	a = make([]int, rank)
	for i := range a {
		a[i] = 1 + r.IntN(5)
	}
	b = append([]int{}, a[r.IntN(rank+1):]...)
	for i := range b {
		if r.IntN(3) == 0 {
			b[i] = 1
		}
	}
	for i := range a {
		if r.IntN(4) == 0 {
			a[i] = 1
		}
	}
	if r.IntN(2) == 0 {
		a, b = b, a
	}
	return a, b
}

// ewAt is the element of a (of shape) that output index idx (of shape
// out) reads when a is broadcast to out.
func ewAt(shape, out []int, idx []int) int {
	o, st := 0, 1
	for i := len(shape) - 1; i >= 0; i-- {
		j := idx[len(out)-len(shape)+i]
		if shape[i] == 1 {
			j = 0
		}
		o += j * st
		st *= shape[i]
	}
	return o
}

// ewIndex is the multi-index of element i of shape.
func ewIndex(shape []int, i int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = i % shape[d]
		i /= shape[d]
	}
	return idx
}

// Every binary op on random broadcast shapes, and on long rows that the
// loop splits, matches index arithmetic.
func TestBroadcastLoopRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ops := []struct {
		name string
		f    func(x, y float32) float32
	}{
		{"Add", func(x, y float32) float32 { return x + y }},
		{"Sub", func(x, y float32) float32 { return x - y }},
		{"Mul", func(x, y float32) float32 { return x * y }},
		{"Div", func(x, y float32) float32 { return x / y }},
		{"Max", func(x, y float32) float32 { return max(x, y) }},
		{"Min", func(x, y float32) float32 { return min(x, y) }},
	}
	cases := [][2][]int{{{3, 40000}, {40000}}, {{40000, 3}, {40000, 1}}, {{70000}, {}}, {{}, {70000}}}
	for range 300 {
		a, b := ewRandShapes(r)
		cases = append(cases, [2][]int{a, b})
	}
	for _, c := range cases {
		a, b := ewRandF32(r, 2, c[0]...), ewRandF32(r, 2, c[1]...)
		out, err := BroadcastShapes(a.Shape, b.Shape)
		require.NoError(t, err)
		for _, op := range ops {
			got, err := ewEval(ewKernel(t, op.name, 13, 2), a, b)
			require.NoError(t, err)
			require.Equal(t, out, got.Shape)
			g, x, y := nd.MustAs[float32](got), nd.MustAs[float32](a), nd.MustAs[float32](b)
			for i := range g {
				idx := ewIndex(out, i)
				want := op.f(x[ewAt(a.Shape, out, idx)], y[ewAt(b.Shape, out, idx)])
				if g[i] != want {
					t.Fatalf("%s %v %v: element %d is %v, want %v", op.name, a.Shape, b.Shape, i, g[i], want)
				}
			}
		}
	}
}

// Reductions over random shapes and axes match float64 sums and maxima.
func TestReduceRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	type tc struct {
		shape []int
		axes  []int64
	}
	cases := []tc{{[]int{3, 50000}, []int64{1}}, {[]int{100000}, nil}, {[]int{50000, 3}, []int64{0}}, {[]int{2, 70000}, []int64{1}}}
	for range 200 {
		a, _ := ewRandShapes(r)
		var axes []int64
		for d := range a {
			if r.IntN(2) == 0 {
				axes = append(axes, int64(d-len(a)*r.IntN(2)))
			}
		}
		cases = append(cases, tc{a, axes})
	}
	for _, c := range cases {
		x := ewRandF32(r, 1, c.shape...)
		red := make([]bool, len(c.shape))
		for d := range red {
			red[d] = len(c.axes) == 0
		}
		for _, a := range c.axes {
			red[(int(a)+len(red))%max(1, len(red))] = true
		}
		for _, op := range []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2"} {
			for _, keep := range []int64{0, 1} {
				attrs := []*onnxpb.AttributeProto{intAttrEW("keepdims", keep)}
				if c.axes != nil {
					attrs = append(attrs, intsAttrEW("axes", c.axes...))
				}
				got, err := ewEval(ewKernel(t, op, 11, 1, attrs...), x)
				require.NoError(t, err)
				// The reference: every input element added into its output.
				var outShape []int
				for d, n := range c.shape {
					if !red[d] {
						outShape = append(outShape, n)
					} else if keep == 1 {
						outShape = append(outShape, 1)
					}
				}
				n := numel(outShape)
				sum, mx, mn, cnt := make([]float64, n), make([]float64, n), make([]float64, n), make([]int, n)
				prod, sq, l1 := make([]float64, n), make([]float64, n), make([]float64, n)
				for i := range mx {
					mx[i], mn[i], prod[i] = math.Inf(-1), math.Inf(1), 1
				}
				xs := nd.MustAs[float32](x)
				for i, v := range xs {
					idx := ewIndex(c.shape, i)
					o := 0
					for d, j := range idx {
						if !red[d] {
							o = o*c.shape[d] + j
						}
					}
					sum[o] += float64(v)
					mx[o] = max(mx[o], float64(v))
					mn[o] = min(mn[o], float64(v))
					prod[o] *= float64(v)
					sq[o] += float64(v) * float64(v)
					l1[o] += math.Abs(float64(v))
					cnt[o]++
				}
				require.Equal(t, len(outShape), len(got.Shape), "%s %v axes %v", op, c.shape, c.axes)
				g := nd.MustAs[float32](got)
				for o := range g {
					want := map[string]float64{"ReduceSum": sum[o], "ReduceMean": sum[o] / float64(cnt[o]), "ReduceMax": mx[o], "ReduceMin": mn[o],
						"ReduceProd": prod[o], "ReduceSumSquare": sq[o], "ReduceL1": l1[o], "ReduceL2": math.Sqrt(sq[o])}[op]
					require.InDelta(t, want, float64(g[o]), 1e-6*(1+math.Abs(want)), "%s %v axes %v output %d", op, c.shape, c.axes, o)
				}
			}
		}
	}
}

// Softmax and LogSoftmax along every axis of random shapes (opset 13) and
// coerced (opset 11) match float64.
func TestSoftmaxRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		shape, _ := ewRandShapes(r)
		if len(shape) == 0 {
			continue
		}
		x := ewRandF32(r, 30, shape...)
		for axis := -len(shape); axis < len(shape); axis++ {
			for _, opset := range []int{11, 13} {
				ax := (axis + len(shape)) % len(shape)
				outer, inner := numel(shape[:ax]), numel(shape[ax+1:])
				n := shape[ax]
				if opset == 11 {
					inner, n = 1, numel(shape[ax:])
				}
				for _, op := range []string{"Softmax", "LogSoftmax"} {
					got, err := ewEval(ewKernel(t, op, opset, 1, intAttrEW("axis", int64(axis))), x)
					require.NoError(t, err)
					g, xs := nd.MustAs[float32](got), nd.MustAs[float32](x)
					for o := range outer {
						for j := range inner {
							at := func(a int) int { return (o*n+a)*inner + j }
							m := math.Inf(-1)
							for a := range n {
								m = max(m, float64(xs[at(a)]))
							}
							s := 0.0
							for a := range n {
								s += math.Exp(float64(xs[at(a)]) - m)
							}
							for a := range n {
								want := math.Exp(float64(xs[at(a)])-m) / s
								if op == "LogSoftmax" {
									want = float64(xs[at(a)]) - m - math.Log(s)
								}
								require.InDelta(t, want, float64(g[at(a)]), 1e-6*(1+math.Abs(want)), "%s opset %d %v axis %d", op, opset, shape, axis)
							}
						}
					}
				}
			}
		}
	}
}

func intAttrEW(name string, v int64) *onnxpb.AttributeProto {
	t := onnxpb.AttributeProto_INT
	return &onnxpb.AttributeProto{Name: &name, Type: &t, I: &v}
}

func intsAttrEW(name string, v ...int64) *onnxpb.AttributeProto {
	t := onnxpb.AttributeProto_INTS
	return &onnxpb.AttributeProto{Name: &name, Type: &t, Ints: v}
}

// ewSweep calls f with float32s across [-lim, lim]: every value whose bits
// are a multiple of step apart, and the special values.
func ewSweep(lim float32, step uint32, f func(x float32)) {
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32} {
		f(x)
	}
	for b := uint32(0); b < math.Float32bits(lim); b += step {
		f(math.Float32frombits(b))
		f(-math.Float32frombits(b))
	}
}

// The fast float32 functions are within 1e-6 relative of math's float64
// ones (or within a subnormal's rounding), over float32's range.
func TestFastMath(t *testing.T) {
	for _, c := range []struct {
		name string
		fast func(float32) float32
		ref  func(float64) float64
		lim  float32
	}{
		{"expf", expf, math.Exp, 200},
		{"tanhf", tanhf, math.Tanh, math.MaxFloat32},
		{"sigmoidf", sigmoidf, sigmoid64, math.MaxFloat32},
		{"expm1f", expm1f, math.Expm1, 0}, // negative arguments only (Elu)
		{"erff", erff, math.Erf, math.MaxFloat32},
	} {
		worst, at := 0.0, float32(0)
		check := func(x float32) {
			if c.name == "expm1f" {
				x = -float32(math.Abs(float64(x)))
			}
			got, want := float64(c.fast(x)), c.ref(float64(x))
			w32 := float64(float32(want))
			switch {
			case math.IsNaN(want) || math.IsInf(w32, 0) || w32 == 0:
				require.Equal(t, math.Float64bits(w32), math.Float64bits(got), "%s(%v)", c.name, x)
				return
			case math.Abs(w32) < 0x1p-126: // subnormal: float32 rounds absolutely
				require.InDelta(t, want, got, 0x1p-149, "%s(%v)", c.name, x)
				return
			}
			if rel := math.Abs(got-want) / math.Abs(want); rel > worst {
				worst, at = rel, x
			}
		}
		lim := c.lim
		if lim == 0 {
			lim = 200
		}
		ewSweep(lim, 331, check)
		check(float32(math.NaN()))
		assert.True(t, math.IsNaN(float64(c.fast(float32(math.NaN())))), c.name)
		t.Logf("%s: worst relative error %.3g at %v", c.name, worst, at)
		assert.Less(t, worst, 1e-6, "%s at %v", c.name, at)
	}
}

// Cast's typed loops convert as nd.Convert does, between every pair of
// types, values out of range and NaN included.
func TestCastMatchesConvert(t *testing.T) {
	vals := []float64{0, 1, -1, 0.5, -0.5, 2.7, -2.7, 127, 128, -129, 255, 256, 65535, 65536, -32769,
		1 << 31, -(1 << 31), 1<<32 + 5, 1 << 53, -(1 << 62), 1 << 63, 1 << 64, -(1 << 63), 1e30, -1e30,
		math.Inf(1), math.Inf(-1), math.NaN(), 3.4e38, 1e-40}
	types := []nd.DType{nd.Float32, nd.Float64, nd.Int8, nd.Int16, nd.Int32, nd.Int64, nd.Uint8, nd.Uint16,
		nd.Uint32, nd.Uint64, nd.Bool}
	for _, from := range types {
		src, err := nd.Convert(nd.Of(vals), from)
		require.NoError(t, err)
		for _, to := range types {
			want, err := nd.Convert(src, to)
			require.NoError(t, err)
			got := nd.Zeros(to, len(vals))
			castInto(got, src, to)
			if to == nd.Float32 || to == nd.Float64 { // NaN bits may differ
				assert.Equal(t, fmt.Sprint(nd.Float64s(want)), fmt.Sprint(nd.Float64s(got)), "%v to %v", from, to)
				continue
			}
			assert.Equal(t, want.Data, got.Data, "%v to %v", from, to)
		}
	}
}

// Cast converts arrays of several blocks of widened values (castBlock)
// whole, each value from itself: an int64 or a uint64 to float32 rounds
// once, as Go's conversion does, not through float64.
func TestCastLongArrays(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 3*castBlock + 17
	ints, uints, floats := make([]int64, n), make([]uint64, n), make([]float64, n)
	for i := range n {
		ints[i] = r.Int64() >> r.IntN(64)
		uints[i] = r.Uint64() >> r.IntN(64)
		floats[i] = r.NormFloat64() * math.Exp2(float64(r.IntN(80)))
	}
	got := nd.Zeros(nd.Float32, n)
	castInto(got, nd.Of(ints), nd.Float32)
	for i, v := range nd.MustAs[float32](got) {
		require.Equal(t, float32(ints[i]), v, "int64 %d", ints[i])
	}
	castInto(got, nd.Of(uints), nd.Float32)
	for i, v := range nd.MustAs[float32](got) {
		require.Equal(t, float32(uints[i]), v, "uint64 %d", uints[i])
	}
	got = nd.Zeros(nd.Int16, n)
	castInto(got, nd.Of(floats), nd.Int16)
	for i, v := range nd.MustAs[int16](got) {
		require.Equal(t, int16(truncI64(floats[i])), v, "float64 %g", floats[i])
	}
}

// Cast to bfloat16 rounds to nearest even, and a float64 rounds once.
func TestCastBFloat16Rounding(t *testing.T) {
	one := 1.0
	tie := one + 1.0/256 // halfway between 1 and the next bfloat16: to even, 1
	above := tie + 0x1p-40
	src := nd.Of([]float64{tie, above, 0.48033667})
	got := nd.Zeros(nd.Float32, 3)
	castInto(got, src, nd.BFloat16)
	g := nd.MustAs[float32](got)
	assert.Equal(t, float32(1), g[0])
	assert.Equal(t, float32(1+1.0/128), g[1], "just above the tie rounds up (through float32 it would be the tie, to even)")
	assert.Equal(t, float32(0.48046875), g[2])
}

// Integer division truncates toward zero and gives 0 for a zero divisor;
// the most negative value over -1 wraps.
func TestIntegerDivision(t *testing.T) {
	k := ewKernel(t, "Div", 14, 2)
	got, err := ewEval(k, nd.Of([]int32{7, -7, 7, -7, 5, math.MinInt32}), nd.Of([]int32{2, 2, -2, -2, 0, -1}))
	require.NoError(t, err)
	assert.Equal(t, []int32{3, -3, -3, 3, 0, math.MinInt32}, nd.MustAs[int32](got))
	got, err = ewEval(k, nd.Of([]uint8{200, 7}), nd.Scalar(uint8(0)))
	require.NoError(t, err)
	assert.Equal(t, []uint8{0, 0}, nd.MustAs[uint8](got))
	got, err = ewEval(k, nd.Scalar(int64(9)), nd.Of([]int64{0, 2, -4}))
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 4, -2}, nd.MustAs[int64](got))
}

// ewBench times op's kernel (made at opset, inputs known) against a copy
// of as many bytes as its largest array (input or output), measured in the
// same benchmark; ratio_to_copy is the kernel's time over the copy's.
func ewBench(b *testing.B, op string, opset int, attrs []*onnxpb.AttributeProto, in ...nd.Array) {
	k := ewKernel(b, op, opset, len(in), attrs...)
	metas := make([]Meta, len(in))
	for i := range in {
		metas[i] = Meta{Type: in[i].Type, Shape: in[i].Shape}
	}
	om, err := k.Infer(metas)
	require.NoError(b, err)
	out := []nd.Array{nd.Zeros(om[0].Type, om[0].Shape...)}
	require.NoError(b, k.Run(in, out))
	size := len(out[0].Data)
	for _, a := range in {
		size = max(size, len(a.Data))
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		if err := k.Run(in, out); err != nil {
			b.Fatal(err)
		}
	}
	perOp := b.Elapsed().Seconds() / float64(b.N)
	src, dst := nd.Bytes(size), nd.Bytes(size)
	for i := range src {
		src[i] = byte(i)
	}
	n := max(b.N, 20)
	start := time.Now()
	for range n {
		copy(dst, src)
	}
	perCopy := time.Since(start).Seconds() / float64(n)
	b.ReportMetric(perOp/perCopy, "ratio_to_copy")
}

// BenchmarkAdd: float32 Add of 1M elements, same shape, a row broadcast, a
// scalar, and a general broadcast (both inputs stretched).
func BenchmarkAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name string
		a, b []int
	}{
		{"same", []int{1024, 1024}, []int{1024, 1024}},
		{"row", []int{1024, 1024}, []int{1024}},
		{"column", []int{1024, 1024}, []int{1024, 1}},
		{"scalar", []int{1024, 1024}, []int{}},
		{"general", []int{64, 1, 16, 1024}, []int{1, 64, 1, 1024}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ewBench(b, "Add", 14, nil, ewRandF32(r, 1, c.a...), ewRandF32(r, 1, c.b...))
		})
	}
}

// BenchmarkSoftmax: float32 Softmax of 1024 rows of 1000 (the last axis),
// and along a strided axis.
func BenchmarkSoftmax(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	b.Run("last", func(b *testing.B) {
		ewBench(b, "Softmax", 13, nil, ewRandF32(r, 5, 1024, 1000))
	})
	b.Run("axis1", func(b *testing.B) {
		ewBench(b, "Softmax", 13, []*onnxpb.AttributeProto{intAttrEW("axis", 1)}, ewRandF32(r, 5, 8, 128, 1000))
	})
}

// BenchmarkUnary: the float32 transcendental activations on 1M elements.
func BenchmarkUnary(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	x := ewRandF32(r, 6, 1024, 1024)
	for _, op := range []string{"Relu", "LeakyRelu", "Exp", "Tanh", "Sigmoid", "Erf"} {
		b.Run(op, func(b *testing.B) { ewBench(b, op, 13, nil, x) })
	}
}

// BenchmarkReduce: float32 ReduceSum of 1M elements over the last axis,
// the first, and all.
func BenchmarkReduce(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	x := ewRandF32(r, 1, 1024, 1024)
	for _, c := range []struct {
		name string
		axes []int64
	}{{"last", []int64{1}}, {"first", []int64{0}}, {"all", nil}} {
		b.Run(c.name, func(b *testing.B) {
			var attrs []*onnxpb.AttributeProto
			if c.axes != nil {
				attrs = append(attrs, intsAttrEW("axes", c.axes...))
			}
			ewBench(b, "ReduceSum", 11, attrs, x)
		})
	}
}

// erff's special values: NaN stays NaN, ±Inf gives ±1, ±0 keeps its sign.
func TestErffSpecials(t *testing.T) {
	nan := erff(float32(math.NaN()))
	assert.True(t, nan != nan)
	assert.Equal(t, float32(1), erff(float32(math.Inf(1))))
	assert.Equal(t, float32(-1), erff(float32(math.Inf(-1))))
	assert.True(t, math.Signbit(float64(erff(float32(math.Copysign(0, -1))))))
	assert.Equal(t, float32(0), erff(0))
}

// A float32 row's softmax on the vector kernels (the largest value, the
// scaling) gives the plain loops' largest value exactly and the softmax
// within a rounding of the float64 sum's order, on rows of every length
// up to past two vectors, with a NaN (all NaN) and with -Inf and +Inf
// among the values.
func TestSoftmaxRowVec(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 84))
	savedS, savedN := softmaxWidth, normWidth
	defer func() { softmaxWidth, normWidth = savedS, savedN }()
	for n := 1; n <= 40; n++ {
		for c := range 4 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(4 * r.NormFloat64())
			}
			k := r.IntN(n)
			switch c {
			case 1:
				x[k] = float32(math.NaN())
			case 2:
				x[k] = float32(math.Inf(-1))
			case 3:
				x[k] = float32(math.Inf(1))
			}
			want := float32(math.Inf(-1))
			for _, v := range x {
				want = maxNaN(want, v)
			}
			softmaxWidth, normWidth = 0, 0
			ref := make([]float32, n)
			softmaxRow(x, ref, false)
			for _, width := range simdWidths() {
				softmaxWidth, normWidth = min(width, 8), min(width, 8)
				m, i := maxVecF32(x)
				if i > 0 && c == 1 && k < i {
					require.True(t, m != m, "n %d: the largest of a row with NaN is %v", n, m)
				}
				got := make([]float32, n)
				softmaxRow(x, got, false)
				for j := range ref {
					if ref[j] != ref[j] {
						require.True(t, got[j] != got[j], "n %d case %d, %d lanes: element %d is %v, want NaN", n, c, width, j, got[j])
						continue
					}
					require.InDelta(t, ref[j], got[j], 1e-7+1e-6*float64(ref[j]), "n %d case %d, %d lanes: element %d", n, c, width, j)
				}
				if c != 1 {
					if i == 0 {
						m = float32(math.Inf(-1))
					}
					for ; i < n; i++ {
						m = maxNaN(m, x[i])
					}
					if i > 0 {
						require.Equal(t, want, m, "n %d case %d, %d lanes: the largest value", n, c, width)
					}
				}
			}
		}
	}
}

// Scaling a row on the vector kernel (attention's scale, softmax's
// inverse sum) gives Go's products and quotients, bit for bit.
func TestScaleVec(t *testing.T) {
	r := rand.New(rand.NewPCG(85, 86))
	saved := softmaxWidth
	defer func() { softmaxWidth = saved }()
	x := make([]float32, 37)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10)))
	}
	const c = 5.656854
	for _, width := range simdWidths() {
		softmaxWidth = min(width, 8)
		for _, div := range []bool{false, true} {
			y := append([]float32(nil), x...)
			i := scaleVecF32(y, c, div)
			require.Equal(t, width != 0, i > 0, "%d lanes: scaled by the kernel?", width)
			for j := range x {
				want := x[j] * c
				if div {
					want = x[j] / c
				}
				if j >= i {
					want = x[j] // left to the caller
				}
				require.Equal(t, math.Float32bits(want), math.Float32bits(y[j]), "%d lanes, div %v: element %d", width, div, j)
			}
		}
	}
}

// Softmaxes of many float32 rows at one call of the AVX-512 kernel
// (softmaxRows) are softmaxRowF32's of each row bit for bit, in place or
// not: rows of 1 to 40 values and of 64, 128 and 197 (the tail of each
// under a mask, sum4's order over the last n%8), with rows that hold a NaN,
// +Inf, -Inf (a masked key), only -Inf (a fully masked row), values far
// below the largest (expf's small and zero results), which the kernel
// leaves to softmaxRowF32 or computes; and without the kernel the same.
func TestSoftmaxRowsEqualsRow(t *testing.T) {
	r := rand.New(rand.NewPCG(87, 88))
	saved := softmaxRowsWide
	defer func() { softmaxRowsWide = saved }()
	lengths := []int{64, 128, 197}
	for n := 1; n <= 40; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		rows := 9
		x := make([]float32, rows*n)
		for i := range x {
			x[i] = float32(4 * r.NormFloat64())
		}
		row := func(i int) []float32 { return x[i*n : (i+1)*n] }
		row(1)[r.IntN(n)] = float32(math.NaN())
		row(2)[r.IntN(n)] = float32(math.Inf(1))
		row(3)[r.IntN(n)] = float32(math.Inf(-1))
		for j := range row(4) {
			row(4)[j] = float32(math.Inf(-1))
		}
		for j := range row(5) {
			row(5)[j] = float32(r.NormFloat64() * 60) // expf near and past its underflow
		}
		want := make([]float32, len(x))
		for i := range rows {
			softmaxRowF32(row(i), want[i*n:(i+1)*n])
		}
		for _, wide := range []bool{true, false} {
			softmaxRowsWide = wide && saved
			got := make([]float32, len(x))
			softmaxRows(x, got, n, false)
			inPlace := append([]float32(nil), x...)
			softmaxRows(inPlace, inPlace, n, false)
			for j := range want {
				require.Equal(t, math.Float32bits(want[j]), math.Float32bits(got[j]), "n %d, kernel %v: row %d element %d", n, softmaxRowsWide, j/n, j%n)
				require.Equal(t, math.Float32bits(want[j]), math.Float32bits(inPlace[j]), "n %d, kernel %v, in place: row %d element %d", n, softmaxRowsWide, j/n, j%n)
			}
		}
		softmaxRowsWide = saved
		if saved { // the kernel's own count: it stops before the NaN row
			require.Equal(t, 1, softmaxRowsVec(x, make([]float32, len(x)), n), "n %d", n)
		}
	}
}

// Add, Sub, Mul and Div of float32s on the vector kernel (both operands
// vectors, or one a single value on either side) give arith's Go loops'
// bits, on lengths around the vector's and values with NaN, infinities,
// zeros of both signs and subnormals among them; the other operations
// and single values stay in Go.
func TestArithVecEqualsGo(t *testing.T) {
	r := rand.New(rand.NewPCG(93, 94))
	saved := arithWidth
	defer func() { arithWidth = saved }()
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-40, -3e-39}
	value := func() float32 {
		if r.IntN(8) == 0 {
			return special[r.IntN(len(special))]
		}
		return float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(8)-4)))
	}
	for _, n := range []int{1, 7, 8, 9, 16, 31, 33, 1000} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = value(), value()
		}
		for _, op := range []ewOp{ewAdd, ewSub, ewMul, ewDiv, ewMax, ewMin} {
			for _, st := range [][2]int{{1, 1}, {1, 0}, {0, 1}, {0, 0}} {
				arithWidth = 0
				want := make([]float32, n)
				arith(op, x, st[0], y, st[1], want, false)
				arithWidth = saved
				got := make([]float32, n)
				arith(op, x, st[0], y, st[1], got, false)
				for i := range want {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "op %d strides %v n %d: element %d", op, st, n, i)
				}
				done := arithVecF32(op, x, st[0], y, st[1], make([]float32, n))
				vector := saved != 0 && op <= ewDiv && st != [2]int{0, 0} && n >= 8
				require.Equal(t, vector, done > 0, "op %d strides %v n %d: on the kernel?", op, st, n)
			}
		}
	}
}
