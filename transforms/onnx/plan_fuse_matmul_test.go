package onnx_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/require"
)

// mmFuseCase is a MatMul, then an Add of a bias vector, an Add of a
// residual and/or an activation.
type mmFuseCase struct {
	batch    []int // A's leading axes
	m, k, n  int
	bInput   bool   // B is a graph input (made in the run), not a weight
	bBatch   bool   // B has A's batch axes (one matrix per product)
	bias     string // "": none; "after": Add(y, bias); "before": Add(bias, y)
	biasRank int    // the bias's rank: 1 ([n]) or more (ones, then n)
	residual string // "": none; "after": Add(y, Z); "before": Add(Z, y)
	act      string // "": none, or an operator
	ln       string // "": none; "scale" or "bias": LayerNormalization along the last axis, with B or without
}

func (c mmFuseCase) String() string {
	return fmt.Sprintf("batch %v m%d k%d n%d bInput %t bBatch %t bias %q/%d residual %q act %q ln %q",
		c.batch, c.m, c.k, c.n, c.bInput, c.bBatch, c.bias, c.biasRank, c.residual, c.act, c.ln)
}

func (c mmFuseCase) model(r *rand.Rand) (*onnxpb.ModelProto, []nd.Array) {
	aShape := append(append([]int{}, c.batch...), c.m, c.k)
	yShape := append(append([]int{}, c.batch...), c.m, c.n)
	bShape := []int{c.k, c.n}
	if c.bBatch {
		bShape = append(append([]int{}, c.batch...), c.k, c.n)
	}
	inputs := []*onnxpb.ValueInfoProto{onnxtest.Value("A", nd.Float32, aShape...)}
	feed := []nd.Array{randF32(r, aShape...)}
	var inits []onnxtest.Named
	if c.bInput {
		inputs = append(inputs, onnxtest.Value("B", nd.Float32, bShape...))
		feed = append(feed, randF32(r, bShape...))
	} else {
		inits = append(inits, onnxtest.Init("B", randF32(r, bShape...)))
	}
	ns := nodes{onnxtest.Node("MatMul", []string{"A", "B"}, []string{"mm"})}
	last := "mm"
	if c.bias != "" {
		shape := []int{c.n}
		for len(shape) < c.biasRank {
			shape = append([]int{1}, shape...)
		}
		inits = append(inits, onnxtest.Init("bias", randF32(r, shape...)))
		in := []string{last, "bias"}
		if c.bias == "before" {
			in = []string{"bias", last}
		}
		ns = append(ns, onnxtest.Node("Add", in, []string{"biased"}))
		last = "biased"
	}
	if c.residual != "" {
		inputs = append(inputs, onnxtest.Value("Z", nd.Float32, yShape...))
		feed = append(feed, randF32(r, yShape...))
		in := []string{last, "Z"}
		if c.residual == "before" {
			in = []string{"Z", last}
		}
		ns = append(ns, onnxtest.Node("Add", in, []string{"sum"}))
		last = "sum"
	}
	switch c.act {
	case "":
	case "SiLU":
		ns = append(ns, onnxtest.Node("Sigmoid", []string{last}, []string{"sig"}), onnxtest.Node("Mul", []string{last, "sig"}, []string{"act"}))
		last = "act"
	case "GeluDiv", "GeluMul", "GeluHalfFirst":
		ns, inits = append(ns, geluNodes(c.act, last, "act")...), append(inits, geluConsts(c.act)...)
		last = "act"
	default:
		ns = append(ns, onnxtest.Node(c.act, []string{last}, []string{"act"}))
		last = "act"
	}
	opset := 14
	if c.ln != "" {
		opset = 17
		inits = append(inits, onnxtest.Init("ln_scale", randF32(r, c.n)))
		in := []string{last, "ln_scale"}
		if c.ln == "bias" {
			inits = append(inits, onnxtest.Init("ln_bias", randF32(r, 1, c.n)))
			in = append(in, "ln_bias")
		}
		ns = append(ns, onnxtest.Node("LayerNormalization", in, []string{"normed"}, onnxtest.Float("epsilon", 1e-5)))
		last = "normed"
	}
	return onnxtest.Model(opset, ns, inputs, []*onnxpb.ValueInfoProto{onnxtest.ValueNoShape(last, nd.Float32)}, inits...), feed
}

// mmFuseCases are random shapes (batch axes or none, one row, odd sizes,
// B a weight, an input or batched), every combination of bias, residual
// and activation, and fixed ones of many row blocks (a transformer's
// layers).
func mmFuseCases(r *rand.Rand, trials int) []mmFuseCase {
	acts := []string{"", "Relu", "Sigmoid", "Tanh", "Erf", "HardSwish", "GeluDiv", "GeluMul", "GeluHalfFirst", "SiLU"}
	lns := []string{"", "", "scale", "bias"}
	sides := []string{"", "after", "before"}
	cases := []mmFuseCase{
		{batch: []int{4, 64}, m: 1, k: 64, n: 256, bias: "before", biasRank: 1, act: "Relu"},
		{batch: []int{3}, m: 200, k: 96, n: 384, bias: "before", biasRank: 1, residual: "after"},
		{batch: []int{2}, m: 130, k: 50, n: 1000, bias: "after", biasRank: 3, residual: "before", act: "Sigmoid"},
		{m: 1, k: 7, n: 5, bias: "after", biasRank: 1},
		{batch: []int{2}, m: 128, k: 64, n: 256, bias: "before", biasRank: 1, act: "GeluDiv"},
		{batch: []int{2}, m: 60, k: 32, n: 100, act: "GeluHalfFirst"},
		{batch: []int{8}, m: 128, k: 64, n: 64, bias: "before", biasRank: 1, residual: "after", ln: "bias"},
		{m: 3, k: 2, n: 1, ln: "scale"},
	}
	for len(cases) < trials {
		c := mmFuseCase{m: 1 + r.IntN(40), k: 1 + r.IntN(40), n: 1 + r.IntN(40), bInput: r.IntN(4) == 0, bBatch: r.IntN(5) == 0,
			bias: sides[r.IntN(3)], biasRank: 1 + r.IntN(2), residual: sides[r.IntN(3)], act: acts[r.IntN(len(acts))], ln: lns[r.IntN(len(lns))]}
		for range r.IntN(3) {
			c.batch = append(c.batch, 1+r.IntN(4))
		}
		if c.bias == "" && c.residual == "" && c.act == "" && c.ln == "" || c.biasRank > len(c.batch)+2 {
			continue
		}
		cases = append(cases, c)
	}
	return cases
}

// A fused MatMul gives the unfused plan's outputs bit for bit, in one step
// where it had two to four.
func TestFusedMatMulEqualsUnfused(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for i, c := range mmFuseCases(r, 150) {
		mp, feed := c.model(r)
		what := fmt.Sprintf("case %d: %v", i, c)
		pf, pp := fusedAndPlain(t, mp, feed, what)

		ops := []string{"MatMul"}
		if c.bias != "" {
			ops = append(ops, "Add")
		}
		if c.residual != "" {
			ops = append(ops, "Add")
		}
		if strings.HasPrefix(c.act, "Gelu") {
			ops = append(ops, "Gelu")
		} else if c.act != "" {
			ops = append(ops, c.act)
		}
		if c.ln != "" {
			ops = append(ops, "LayerNormalization")
		}
		require.Equal(t, []string{strings.Join(ops, "+")}, pf.StepOps(), "case %d: %v", i, c)
		if slices.Contains(ops, "Gelu") {
			require.Len(t, pp.StepOps(), len(ops)+4, "case %d: %v", i, c)
		} else if c.act == "SiLU" {
			require.Len(t, pp.StepOps(), len(ops)+1, "case %d: %v", i, c)
		} else {
			require.Equal(t, ops, pp.StepOps(), "case %d: %v", i, c)
		}
		require.Equal(t, pp.ProductFLOPs(), pf.ProductFLOPs(), "case %d: %v", i, c)

		requireSameBits(t, pf, pp, feed, what)
	}
}

// A fused product's rows cut in blocks of whole kernel tiles, as many as
// make each core's share even, give the unfused plan's bits at every
// thread count: rows under a tile, a tile and one more row, 197 (vit_b_16's
// tokens), 2048 (bert's 32 x 64), each cut at 1 to 5 threads.
func TestFusedMatMulRowBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(75, 76))
	for _, rows := range []int{5, 15, 197, 2048} {
		c := mmFuseCase{m: rows, k: 24, n: 768, bias: "after", biasRank: 1, act: "Relu"}
		mp, feed := c.model(r)
		what := fmt.Sprintf("%d rows", rows)
		pf, pp := fusedAndPlain(t, mp, feed, what)
		require.Equal(t, []string{"MatMul+Add+Relu"}, pf.StepOps(), what)
		for procs := 1; procs <= 5; procs++ {
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				requireSameBits(t, pf, pp, feed, fmt.Sprintf("%s at %d threads", what, procs))
			}()
		}
	}
}

// What a MatMul does not fuse with: an Add of a vector that is not a
// constant, or that runs along another axis than the last (a column),
// which are neither a bias nor a residual.
func TestMatMulFusionLeavesWhatItMustNot(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	a := randF32(r, 2, 3, 4)
	av := onnxtest.Value("A", nd.Float32, 2, 3, 4)
	w := onnxtest.Init("W", randF32(r, 4, 5))
	mm := onnxtest.Node("MatMul", []string{"A", "W"}, []string{"mm"})
	add := onnxtest.Node("Add", []string{"mm", "v"}, []string{"y"})
	out := []*onnxpb.ValueInfoProto{onnxtest.ValueNoShape("y", nd.Float32)}
	for name, c := range map[string]struct {
		m    *onnxpb.ModelProto
		feed []nd.Array
	}{
		"vector of the run": {onnxtest.Model(14, nodes{mm, add}, []*onnxpb.ValueInfoProto{av, onnxtest.Value("v", nd.Float32, 5)}, out, w),
			[]nd.Array{a, randF32(r, 5)}},
		"column": {onnxtest.Model(14, nodes{mm, add}, []*onnxpb.ValueInfoProto{av}, out, w, onnxtest.Init("v", randF32(r, 3, 1))),
			[]nd.Array{a}},
	} {
		m, err := onnxtest.Load(c.m)
		require.NoError(t, err, name)
		p, err := m.Plan(c.feed)
		require.NoError(t, err, name)
		require.Equal(t, []string{"MatMul", "Add"}, p.StepOps(), name)
	}
}

// On the device (the emulator) a fused MatMul is the products and one
// epilogue kernel, never the host, and gives the CPU's outputs.
func TestFusedMatMulOnDevice(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(75, 76))
	for i, c := range mmFuseCases(r, 40) {
		if c.m*c.n*c.k*max(1, len(c.batch)*4) > 200000 {
			continue // the emulator runs a thread at a time
		}
		mp, feed := c.model(r)
		m, err := onnxtest.Load(mp)
		require.NoError(t, err)
		want, err := m.Run(feed)
		require.NoError(t, err, "case %d: %v", i, c)
		got, onHost, err := runOnDevice(dev, m, feed)
		require.NoError(t, err, "case %d: %v", i, c)
		require.Empty(t, onHost, "case %d: %v", i, c)
		g, w := nd.MustAs[float32](got[0]), nd.MustAs[float32](want[0])
		for j := range w {
			require.InDelta(t, w[j], g[j], 1e-4*(1+math.Abs(float64(w[j]))), "case %d: %v: element %d", i, c, j)
		}
	}
}

// geluNodes are GELU as PyTorch exports it with Erf, from x to y: nn.GELU's
// x * (erf(x / √2) + 1) * ½ ("GeluDiv"; "GeluMul" with x * 1/√2), or the
// written-out x * ½ * (1 + erf(x / √2)) ("GeluHalfFirst"), the
// constants' operands on either side as exporters put them.
func geluNodes(form, x, y string) nodes {
	pre := onnxtest.Node("Div", []string{x, "g_c"}, []string{y + "_d"})
	if form == "GeluMul" {
		pre = onnxtest.Node("Mul", []string{"g_c", x}, []string{y + "_d"})
	}
	ns := nodes{pre, onnxtest.Node("Erf", []string{y + "_d"}, []string{y + "_e"})}
	if form == "GeluHalfFirst" {
		return append(ns, onnxtest.Node("Mul", []string{x, "g_half"}, []string{y + "_h"}),
			onnxtest.Node("Add", []string{"g_one", y + "_e"}, []string{y + "_f"}),
			onnxtest.Node("Mul", []string{y + "_h", y + "_f"}, []string{y}))
	}
	return append(ns, onnxtest.Node("Add", []string{y + "_e", "g_one"}, []string{y + "_f"}),
		onnxtest.Node("Mul", []string{y + "_f", x}, []string{y + "_g"}),
		onnxtest.Node("Mul", []string{y + "_g", "g_half"}, []string{y}))
}

func geluConsts(form string) []onnxtest.Named {
	c := float32(math.Sqrt2)
	if form == "GeluMul" {
		c = float32(1 / math.Sqrt2)
	}
	return []onnxtest.Named{onnxtest.Init("g_c", nd.Scalar(c)), onnxtest.Init("g_one", nd.Scalar[float32](1)),
		onnxtest.Init("g_half", nd.Scalar[float32](0.5))}
}

// A Gemm (a Linear layer as older exporters write it) fuses with the Add
// of a residual, an activation and a LayerNormalization after it: the
// unfused plan's outputs bit for bit, for either transposition, C a row,
// a matrix or none, alpha and beta; on the device too, never the host.
func TestFusedGemmEqualsUnfused(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(77, 78))
	acts := []string{"", "Relu", "GeluDiv", "SiLU", "Tanh"}
	for i := range 60 {
		m, k, n := 1+r.IntN(40), 1+r.IntN(40), 1+r.IntN(40)
		if i == 0 {
			m, k, n = 197, 96, 384
		}
		transA, transB := r.IntN(2) == 0, r.IntN(2) == 0
		aShape, bShape := []int{m, k}, []int{k, n}
		if transA {
			aShape = []int{k, m}
		}
		if transB {
			bShape = []int{n, k}
		}
		inits := []onnxtest.Named{onnxtest.Init("B", randF32(r, bShape...))}
		gin := []string{"A", "B"}
		switch r.IntN(3) {
		case 1:
			inits, gin = append(inits, onnxtest.Init("C", randF32(r, n))), append(gin, "C")
		case 2:
			inits, gin = append(inits, onnxtest.Init("C", randF32(r, m, n))), append(gin, "C")
		}
		attrs := []*onnxpb.AttributeProto{onnxtest.Int("transA", int64(boolInt(transA))), onnxtest.Int("transB", int64(boolInt(transB))),
			onnxtest.Float("alpha", 0.5+r.Float32()), onnxtest.Float("beta", 0.5+r.Float32())}
		ns := nodes{onnxtest.Node("Gemm", gin, []string{"g"}, attrs...)}
		inputs := []*onnxpb.ValueInfoProto{onnxtest.Value("A", nd.Float32, aShape...)}
		feed := []nd.Array{randF32(r, aShape...)}
		last, ops := "g", []string{"Gemm"}
		if r.IntN(2) == 0 {
			inputs, feed = append(inputs, onnxtest.Value("Z", nd.Float32, m, n)), append(feed, randF32(r, m, n))
			ns, last, ops = append(ns, onnxtest.Node("Add", []string{"Z", last}, []string{"sum"})), "sum", append(ops, "Add")
		}
		act := acts[r.IntN(len(acts))]
		switch act {
		case "":
		case "GeluDiv":
			ns, inits = append(ns, geluNodes(act, last, "act")...), append(inits, geluConsts(act)...)
			last, ops = "act", append(ops, "Gelu")
		case "SiLU":
			ns = append(ns, onnxtest.Node("Sigmoid", []string{last}, []string{"sig"}), onnxtest.Node("Mul", []string{last, "sig"}, []string{"act"}))
			last, ops = "act", append(ops, "SiLU")
		default:
			ns, last, ops = append(ns, onnxtest.Node(act, []string{last}, []string{"act"})), "act", append(ops, act)
		}
		if r.IntN(2) == 0 {
			inits = append(inits, onnxtest.Init("ln_scale", randF32(r, n)), onnxtest.Init("ln_bias", randF32(r, n)))
			ns = append(ns, onnxtest.Node("LayerNormalization", []string{last, "ln_scale", "ln_bias"}, []string{"normed"}))
			last, ops = "normed", append(ops, "LayerNormalization")
		}
		mp := onnxtest.Model(17, ns, inputs, []*onnxpb.ValueInfoProto{onnxtest.ValueNoShape(last, nd.Float32)}, inits...)
		what := fmt.Sprintf("case %d: m%d k%d n%d transA %t transB %t ops %v", i, m, k, n, transA, transB, ops)
		pf, pp := fusedAndPlain(t, mp, feed, what)
		if len(ops) == 1 {
			require.Equal(t, []string{"Gemm"}, pf.StepOps(), what)
			continue
		}
		require.Equal(t, []string{strings.Join(ops, "+")}, pf.StepOps(), what)
		require.Equal(t, pp.ProductFLOPs(), pf.ProductFLOPs(), what)
		requireSameBits(t, pf, pp, feed, what)
		if m*n*k > 100000 {
			continue // the emulator runs a thread at a time
		}
		requireDeviceAsCPU(t, dev, mp, feed, 1e-4, what)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
