package onnx_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/require"
)

// fuseCase is a Conv, then an Add of a residual and/or an activation.
type fuseCase struct {
	n, c, m, group int
	in, k          [2]int
	stride, dil    int
	pads           [4]int
	bias           bool
	residual       string // "": none; "after": Add(conv, Z); "before": Add(Z, conv)
	act            string // "": none, or an operator (Clip6: Clip at opset 6, attributes)
}

func (fc fuseCase) String() string {
	return fmt.Sprintf("n%d c%d m%d g%d in%v k%v s%d d%d pads%v bias %t residual %q act %q",
		fc.n, fc.c, fc.m, fc.group, fc.in, fc.k, fc.stride, fc.dil, fc.pads, fc.bias, fc.residual, fc.act)
}

// out is the convolution's output size along axis a (0 if none).
func (fc fuseCase) out(a int) int {
	span := fc.in[a] + fc.pads[a] + fc.pads[a+2] - fc.dil*(fc.k[a]-1) - 1
	if span < 0 {
		return 0
	}
	return span/fc.stride + 1
}

// model builds the case's model (opset 13, or 6 for Clip6) and its inputs:
// X, and Z with a residual.
func (fc fuseCase) model(r *rand.Rand) (*onnxpb.ModelProto, []nd.Array) {
	opset := 13
	oh, ow := fc.out(0), fc.out(1)
	x := randF32(r, fc.n, fc.c, fc.in[0], fc.in[1])
	inits := []onnxtest.Named{onnxtest.Init("W", randF32(r, fc.m, fc.c/fc.group, fc.k[0], fc.k[1]))}
	convIn := []string{"X", "W"}
	if fc.bias {
		inits = append(inits, onnxtest.Init("B", randF32(r, fc.m)))
		convIn = append(convIn, "B")
	}
	attrs := []*onnxpb.AttributeProto{onnxtest.Int("group", int64(fc.group)), onnxtest.Ints("strides", int64(fc.stride), int64(fc.stride)),
		onnxtest.Ints("dilations", int64(fc.dil), int64(fc.dil)),
		onnxtest.Ints("pads", int64(fc.pads[0]), int64(fc.pads[1]), int64(fc.pads[2]), int64(fc.pads[3])),
		onnxtest.Ints("kernel_shape", int64(fc.k[0]), int64(fc.k[1]))}
	ns := nodes{onnxtest.Node("Conv", convIn, []string{"conv"}, attrs...)}
	inputs := []*onnxpb.ValueInfoProto{onnxtest.Value("X", nd.Float32, fc.n, fc.c, fc.in[0], fc.in[1])}
	feed := []nd.Array{x}
	last := "conv"
	switch fc.residual {
	case "after", "before":
		inputs = append(inputs, onnxtest.Value("Z", nd.Float32, fc.n, fc.m, oh, ow))
		feed = append(feed, randF32(r, fc.n, fc.m, oh, ow))
		in := []string{"conv", "Z"}
		if fc.residual == "before" {
			in = []string{"Z", "conv"}
		}
		ns = append(ns, onnxtest.Node("Add", in, []string{"sum"}))
		last = "sum"
	}
	switch fc.act {
	case "":
	case "Clip":
		inits = append(inits, onnxtest.Init("lo", nd.Scalar[float32](-0.25)), onnxtest.Init("hi", nd.Scalar[float32](0.5)))
		ns = append(ns, onnxtest.Node("Clip", []string{last, "lo", "hi"}, []string{"act"}))
		last = "act"
	case "Clip6":
		opset = 6
		ns = append(ns, onnxtest.Node("Clip", []string{last}, []string{"act"}, onnxtest.Float("min", 0), onnxtest.Float("max", 6)))
		last = "act"
	case "LeakyRelu":
		ns = append(ns, onnxtest.Node("LeakyRelu", []string{last}, []string{"act"}, onnxtest.Float("alpha", 0.3)))
		last = "act"
	case "HardSigmoid":
		ns = append(ns, onnxtest.Node("HardSigmoid", []string{last}, []string{"act"}, onnxtest.Float("alpha", 0.3), onnxtest.Float("beta", 0.4)))
		last = "act"
	case "SiLU":
		ns = append(ns, onnxtest.Node("Sigmoid", []string{last}, []string{"sig"}), onnxtest.Node("Mul", []string{"sig", last}, []string{"act"}))
		last = "act"
	case "HardSwish":
		opset = 14
		fallthrough
	default:
		ns = append(ns, onnxtest.Node(fc.act, []string{last}, []string{"act"}))
		last = "act"
	}
	out := []*onnxpb.ValueInfoProto{onnxtest.ValueNoShape(last, nd.Float32)}
	return onnxtest.Model(opset, ns, inputs, out, inits...), feed
}

// fuseCases are random shapes (odd channel counts, groups, depthwise,
// stride 2, dilation, padding wider than the kernel, batch 1), every
// activation the epilogue takes, with and without a residual, and a few
// fixed ones large enough for the other product forms (thick channels, a
// pointwise convolution, many images).
func fuseCases(r *rand.Rand, trials int) []fuseCase {
	acts := []string{"", "Relu", "Clip", "Clip6", "HardSwish", "HardSigmoid", "Sigmoid", "LeakyRelu", "Tanh", "SiLU"}
	residuals := []string{"", "after", "before"}
	cases := []fuseCase{
		{n: 8, c: 16, m: 16, group: 1, in: [2]int{16, 16}, k: [2]int{3, 3}, stride: 1, dil: 1, pads: [4]int{1, 1, 1, 1}, bias: true, residual: "after", act: "Relu"},
		{n: 2, c: 96, m: 80, group: 1, in: [2]int{7, 7}, k: [2]int{1, 1}, stride: 1, dil: 1, bias: true, residual: "before", act: "HardSwish"},
		{n: 2, c: 72, m: 130, group: 1, in: [2]int{9, 9}, k: [2]int{3, 3}, stride: 2, dil: 1, pads: [4]int{1, 1, 1, 1}, bias: false, act: "Clip"},
		{n: 3, c: 40, m: 40, group: 40, in: [2]int{13, 11}, k: [2]int{5, 5}, stride: 2, dil: 1, pads: [4]int{2, 2, 2, 2}, bias: true, act: "HardSwish"},
		{n: 1, c: 24, m: 24, group: 24, in: [2]int{9, 9}, k: [2]int{3, 3}, stride: 1, dil: 2, pads: [4]int{2, 2, 2, 2}, bias: true, residual: "after"},
		{n: 4, c: 32, m: 96, group: 1, in: [2]int{14, 14}, k: [2]int{1, 1}, stride: 1, dil: 1, bias: true, act: "SiLU"},
		// one-pixel images, squeeze-and-excitation's (convPixels)
		{n: 8, c: 120, m: 30, group: 1, in: [2]int{1, 1}, k: [2]int{1, 1}, stride: 1, dil: 1, bias: true, act: "SiLU"},
		{n: 3, c: 30, m: 120, group: 1, in: [2]int{1, 1}, k: [2]int{1, 1}, stride: 2, dil: 1, residual: "after", act: "Sigmoid"},
	}
	for len(cases) < trials {
		group := []int{1, 1, 2, 3}[r.IntN(4)]
		fc := fuseCase{n: 1 + r.IntN(3), group: group, c: group * (1 + r.IntN(5)), m: group * (1 + r.IntN(5)),
			in: [2]int{1 + r.IntN(12), 1 + r.IntN(12)}, k: [2]int{1 + r.IntN(3), 1 + r.IntN(3)}, stride: 1 + r.IntN(2), dil: 1 + r.IntN(2),
			pads: [4]int{r.IntN(5), r.IntN(5), r.IntN(5), r.IntN(5)}, bias: r.IntN(3) != 0,
			residual: residuals[r.IntN(3)], act: acts[r.IntN(len(acts))]}
		if r.IntN(4) == 0 { // depthwise
			c := fc.c
			fc.group, fc.m = c, c*(1+r.IntN(2))
		}
		if fc.out(0) < 1 || fc.out(1) < 1 || fc.residual == "" && fc.act == "" || fc.act == "Clip6" && fc.residual != "" {
			continue
		}
		cases = append(cases, fc)
	}
	return cases
}

// A fused plan gives the unfused plan's outputs bit for bit, in one step
// where it had two or three, for every conv path and activation.
func TestFusedConvEqualsUnfused(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for i, fc := range fuseCases(r, 140) {
		mp, feed := fc.model(r)
		what := fmt.Sprintf("case %d: %v", i, fc)
		pf, pp := fusedAndPlain(t, mp, feed, what)

		ops := []string{"Conv"}
		if fc.residual != "" {
			ops = append(ops, "Add")
		}
		if fc.act != "" {
			ops = append(ops, strings.TrimSuffix(fc.act, "6"))
		}
		require.Equal(t, []string{strings.Join(ops, "+")}, pf.StepOps(), "case %d: %v", i, fc)
		if fc.act == "SiLU" {
			require.Len(t, pp.StepOps(), len(ops)+1, "case %d: %v", i, fc)
		} else {
			require.Equal(t, ops, pp.StepOps(), "case %d: %v", i, fc)
		}

		requireSameBits(t, pf, pp, feed, what)
	}
}

// What is not fused: a Conv output that is a graph output or read twice
// (but for SiLU's x * Sigmoid(x) and GELU), an Add that broadcasts, a Clip
// whose bounds come with the data.
func TestFusionLeavesWhatItMustNot(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	x := randF32(r, 1, 2, 5, 5)
	w := onnxtest.Init("W", randF32(r, 3, 2, 3, 3))
	conv := onnxtest.Node("Conv", []string{"X", "W"}, []string{"conv"}, onnxtest.Ints("pads", 1, 1, 1, 1))
	xv := onnxtest.Value("X", nd.Float32, 1, 2, 5, 5)
	out := func(names ...string) []*onnxpb.ValueInfoProto {
		var vs []*onnxpb.ValueInfoProto
		for _, n := range names {
			vs = append(vs, onnxtest.ValueNoShape(n, nd.Float32))
		}
		return vs
	}
	for name, c := range map[string]struct {
		m    *onnxpb.ModelProto
		feed []nd.Array
		ops  []string
	}{
		"graph output": {onnxtest.Model(13, nodes{conv, onnxtest.Node("Relu", []string{"conv"}, []string{"y"})}, []*onnxpb.ValueInfoProto{xv}, out("conv", "y"), w),
			[]nd.Array{x}, []string{"Conv", "Relu"}},
		"read twice": {onnxtest.Model(13, nodes{conv, onnxtest.Node("Sigmoid", []string{"conv"}, []string{"s"}), onnxtest.Node("Add", []string{"conv", "s"}, []string{"y"})},
			[]*onnxpb.ValueInfoProto{xv}, out("y"), w), []nd.Array{x}, []string{"Conv", "Sigmoid", "Add"}},
		"broadcast": {onnxtest.Model(13, nodes{conv, onnxtest.Node("Add", []string{"conv", "Z"}, []string{"y"})},
			[]*onnxpb.ValueInfoProto{xv, onnxtest.Value("Z", nd.Float32, 1, 3, 1, 1)}, out("y"), w), []nd.Array{x, randF32(r, 1, 3, 1, 1)}, []string{"Conv", "Add"}},
		"bounds with the data": {onnxtest.Model(13, nodes{conv, onnxtest.Node("Clip", []string{"conv", "lo"}, []string{"y"})},
			[]*onnxpb.ValueInfoProto{xv, onnxtest.Value("lo", nd.Float32)}, out("y"), w), []nd.Array{x, nd.Scalar[float32](0)}, []string{"Conv", "Clip"}},
	} {
		m, err := onnxtest.Load(c.m)
		require.NoError(t, err, name)
		p, err := m.Plan(c.feed)
		require.NoError(t, err, name)
		require.Equal(t, c.ops, p.StepOps(), name)
	}
}

// On the device (the emulator, on the kernels' own source) a fused step is
// the products and one epilogue kernel, never the host, and gives the
// CPU's outputs.
func TestFusedConvOnDevice(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(65, 66))
	for i, fc := range fuseCases(r, 40) {
		if fc.n*fc.m*fc.c*fc.in[0]*fc.in[1] > 200000 {
			continue // the emulator runs a thread at a time
		}
		mp, feed := fc.model(r)
		m, err := onnxtest.Load(mp)
		require.NoError(t, err)
		want, err := m.Run(feed)
		require.NoError(t, err, "case %d: %v", i, fc)
		got, onHost, err := runOnDevice(dev, m, feed)
		require.NoError(t, err, "case %d: %v", i, fc)
		require.Empty(t, onHost, "case %d: %v", i, fc)
		g, w := nd.MustAs[float32](got[0]), nd.MustAs[float32](want[0])
		for j := range w {
			require.InDelta(t, w[j], g[j], 1e-4*(1+math.Abs(float64(w[j]))), "case %d: %v: element %d", i, fc, j)
		}
	}
}

// fusedAndPlain plans model mp for feed twice, with the plans' fusion
// and without (what names the case in failures).
func fusedAndPlain(t *testing.T, mp *onnxpb.ModelProto, feed []nd.Array, what string) (fused, plain *onnx.Plan) {
	t.Helper()
	mf, err := onnxtest.Load(mp)
	require.NoError(t, err, what)
	mu, err := onnxtest.Load(mp)
	require.NoError(t, err, what)
	fused, err = mf.Plan(feed)
	require.NoError(t, err, what)
	old := onnx.SetFusion(false)
	defer onnx.SetFusion(old)
	plain, err = mu.Plan(feed)
	require.NoError(t, err, what)
	return fused, plain
}

// requireSameBits runs both plans on feed and requires their first
// outputs to be the same shape and the same bits.
func requireSameBits(t *testing.T, fused, plain *onnx.Plan, feed []nd.Array, what string) {
	t.Helper()
	got, err := fused.Run(feed)
	require.NoError(t, err, what)
	ref, err := plain.Run(feed)
	require.NoError(t, err, what)
	require.Equal(t, ref[0].Shape, got[0].Shape, what)
	g, w := nd.MustAs[float32](got[0]), nd.MustAs[float32](ref[0])
	for j := range w {
		if math.Float32bits(g[j]) != math.Float32bits(w[j]) {
			t.Fatalf("%s: element %d: fused %v, unfused %v", what, j, g[j], w[j])
		}
	}
}

// A Transpose back from channels last, a Mul by a per-channel constant and
// an Add of the residual (ConvNeXt's block end) plan as one step
// (Transpose+Mul+Add) that gives the unfused plan's bits, on channels that
// fill blocks of 16 and that do not, positions that do not, each operand
// order, NaN and -0 among the values; and on the device (the emulator)
// its outputs, never the host. One that the Mul's other operand is not a
// per-channel constant of, or whose Add broadcasts, is left alone.
func TestFusedScaleAdd(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(81, 82))
	type scaleCase struct {
		n, h, w, c    int
		scale         []int // the constant's shape
		mulSwap, swap bool  // Mul(S, T), Add(X, M)
		xShape        []int // the residual's shape (nil: the output's)
		fused         bool
	}
	cases := []scaleCase{
		{n: 2, h: 7, w: 9, c: 96, scale: []int{96, 1, 1}, fused: true},
		{n: 1, h: 5, w: 5, c: 20, scale: []int{1, 20, 1, 1}, mulSwap: true, swap: true, fused: true},
		{n: 3, h: 4, w: 8, c: 32, scale: []int{32, 1, 1}, swap: true, fused: true},
		{n: 1, h: 3, w: 3, c: 7, scale: []int{7, 1, 1}, mulSwap: true, fused: true},
		{n: 2, h: 4, w: 4, c: 16, scale: []int{16, 4, 4}},                             // not one value a channel
		{n: 2, h: 4, w: 4, c: 16, scale: []int{16, 1, 1}, xShape: []int{1, 16, 4, 4}}, // the Add broadcasts
	}
	for i, sc := range cases {
		what := fmt.Sprintf("case %d: %+v", i, sc)
		u := randF32(r, sc.n, sc.h, sc.w, sc.c)
		us := nd.MustAs[float32](u)
		us[0], us[len(us)-1] = float32(math.NaN()), float32(math.Copysign(0, -1))
		xShape := sc.xShape
		if xShape == nil {
			xShape = []int{sc.n, sc.c, sc.h, sc.w}
		}
		mulIn, addIn := []string{"t", "s"}, []string{"m", "x"}
		if sc.mulSwap {
			mulIn = []string{"s", "t"}
		}
		if sc.swap {
			addIn = []string{"x", "m"}
		}
		xIn := "x"
		if i%2 == 0 { // the residual the run's own (the output written over it), else the graph's input
			xIn = "xin"
		}
		ns := nodes{
			onnxtest.Node("Abs", []string{xIn}, []string{xIn + ".abs"}),
			onnxtest.Node("Neg", []string{xIn + ".abs"}, []string{"x"}),
			onnxtest.Node("Transpose", []string{"u"}, []string{"t"}, onnxtest.Ints("perm", 0, 3, 1, 2)),
			onnxtest.Node("Mul", mulIn, []string{"m"}),
			onnxtest.Node("Add", addIn, []string{"y"}),
			onnxtest.Node("Relu", []string{"y"}, []string{"out"}), // y the run's own
		}
		if xIn == "x" {
			ns = ns[2:]
		}
		inputs := []*onnxpb.ValueInfoProto{onnxtest.Value("u", nd.Float32, sc.n, sc.h, sc.w, sc.c), onnxtest.Value(xIn, nd.Float32, xShape...)}
		mp := onnxtest.Model(17, ns, inputs, []*onnxpb.ValueInfoProto{onnxtest.ValueNoShape("out", nd.Float32)}, onnxtest.Init("s", randF32(r, sc.scale...)))
		feed := []nd.Array{u, randF32(r, xShape...)}
		pf, pp := fusedAndPlain(t, mp, feed, what)
		ops := []string{"Transpose", "Mul", "Add", "Relu"}
		if sc.fused {
			ops = []string{"Transpose+Mul+Add", "Relu"}
		}
		if xIn != "x" {
			ops = append([]string{"Abs", "Neg"}, ops...)
		}
		require.Equal(t, ops, pf.StepOps(), what)
		if !sc.fused {
			continue
		}
		require.Equal(t, boolInt(xIn != "x"), onnx.Overwritten(pf), "%s: the output written over the residual", what)
		requireSameBits(t, pf, pp, feed, what)
		requireDeviceAsCPU(t, dev, mp, feed, 1e-5, what)
	}
}
