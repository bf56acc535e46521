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

// attnCase is scaled dot-product attention as exporters write it.
type attnCase struct {
	batch      []int // the leading axes (batch, heads)
	s, kv      int   // queries, keys
	d, dv      int
	scale      string // "": none; "Div", "Mul" (x * c), "MulFirst" (c * x)
	mask       string // "": none; "row" (batch, 1, 1, keys as BERT's), "full" (the scores' shape), "keys" (rank 2: queries x keys), "first" (Add(mask, x))
	transposeK bool   // K given as batch x keys x d and transposed in the graph
	// heads: batch is [batch, heads] and Q, K and V come as [batch,
	// tokens, heads, d] through Transposes (a head split), and the output
	// goes back through one (the merge).
	heads bool
	opset int
}

func (c attnCase) String() string {
	return fmt.Sprintf("batch %v s%d kv%d d%d dv%d scale %q mask %q transposeK %t heads %t opset %d", c.batch, c.s, c.kv, c.d, c.dv, c.scale, c.mask, c.transposeK, c.heads, c.opset)
}

func (c attnCase) model(r *rand.Rand) (*onnxpb.ModelProto, []nd.Array) {
	shape := func(tail ...int) []int { return append(append([]int{}, c.batch...), tail...) }
	if c.heads {
		return c.headsModel(r)
	}
	inputs := []*onnxpb.ValueInfoProto{onnxtest.Value("Q", nd.Float32, shape(c.s, c.d)...)}
	feed := []nd.Array{randF32(r, shape(c.s, c.d)...)}
	var ns nodes
	var inits []onnxtest.Named
	kName := "Kt"
	if c.transposeK {
		inputs = append(inputs, onnxtest.Value("K", nd.Float32, shape(c.kv, c.d)...))
		feed = append(feed, randF32(r, shape(c.kv, c.d)...))
		perm := make([]int64, len(c.batch)+2)
		for i := range perm {
			perm[i] = int64(i)
		}
		perm[len(perm)-2], perm[len(perm)-1] = perm[len(perm)-1], perm[len(perm)-2]
		ns = append(ns, onnxtest.Node("Transpose", []string{"K"}, []string{"Kt"}, onnxtest.Ints("perm", perm...)))
	} else {
		inputs = append(inputs, onnxtest.Value(kName, nd.Float32, shape(c.d, c.kv)...))
		feed = append(feed, randF32(r, shape(c.d, c.kv)...))
	}
	ns = append(ns, onnxtest.Node("MatMul", []string{"Q", kName}, []string{"scores"}))
	last := "scores"
	switch c.scale {
	case "Div":
		inits = append(inits, onnxtest.Init("c", nd.Scalar(float32(math.Sqrt(float64(c.d))))))
		ns = append(ns, onnxtest.Node("Div", []string{last, "c"}, []string{"scaled"}))
		last = "scaled"
	case "Mul", "MulFirst":
		inits = append(inits, onnxtest.Init("c", nd.Scalar(float32(1/math.Sqrt(float64(c.d))))))
		in := []string{last, "c"}
		if c.scale == "MulFirst" {
			in = []string{"c", last}
		}
		ns = append(ns, onnxtest.Node("Mul", in, []string{"scaled"}))
		last = "scaled"
	}
	if c.mask != "" {
		var ms []int
		switch c.mask {
		case "row":
			ms = shape(1, c.kv)
			for i := 1; i < len(c.batch); i++ {
				ms[i] = 1
			}
		case "full", "first":
			ms = shape(c.s, c.kv)
		case "keys":
			ms = []int{c.s, c.kv}
		}
		m := randF32(r, ms...)
		for i, v := range nd.MustAs[float32](m) { // masked keys as BERT's, -10000
			if v < -0.5 {
				nd.MustAs[float32](m)[i] = -10000
			}
		}
		inputs = append(inputs, onnxtest.Value("mask", nd.Float32, ms...))
		feed = append(feed, m)
		in := []string{last, "mask"}
		if c.mask == "first" {
			in = []string{"mask", last}
		}
		ns = append(ns, onnxtest.Node("Add", in, []string{"masked"}))
		last = "masked"
	}
	var attrs []*onnxpb.AttributeProto
	if c.opset < 13 {
		attrs = append(attrs, onnxtest.Int("axis", int64(len(c.batch)+1)))
	}
	ns = append(ns, onnxtest.Node("Softmax", []string{last}, []string{"probs"}, attrs...))
	inputs = append(inputs, onnxtest.Value("V", nd.Float32, shape(c.kv, c.dv)...))
	feed = append(feed, randF32(r, shape(c.kv, c.dv)...))
	ns = append(ns, onnxtest.Node("MatMul", []string{"probs", "V"}, []string{"y"}))
	return onnxtest.Model(c.opset, ns, inputs, []*onnxpb.ValueInfoProto{onnxtest.ValueNoShape("y", nd.Float32)}, inits...), feed
}

// headsModel is the case's model with the head split and merge: inputs
// [batch, tokens, heads, d], Transposes to [batch, heads, tokens, d] (Kᵀ
// to [batch, heads, d, tokens]), the attention, and a Transpose back.
func (c attnCase) headsModel(r *rand.Rand) (*onnxpb.ModelProto, []nd.Array) {
	b, h := c.batch[0], c.batch[1]
	in := func(name string, tokens, d int) (*onnxpb.ValueInfoProto, nd.Array) {
		return onnxtest.Value(name, nd.Float32, b, tokens, h, d), randF32(r, b, tokens, h, d)
	}
	qv, q := in("Q", c.s, c.d)
	kv, k := in("K", c.kv, c.d)
	vv, v := in("V", c.kv, c.dv)
	ns := nodes{
		onnxtest.Node("Transpose", []string{"Q"}, []string{"Qh"}, onnxtest.Ints("perm", 0, 2, 1, 3)),
		onnxtest.Node("Transpose", []string{"K"}, []string{"Kt"}, onnxtest.Ints("perm", 0, 2, 3, 1)),
		onnxtest.Node("MatMul", []string{"Qh", "Kt"}, []string{"scores"}),
	}
	var inits []onnxtest.Named
	last := "scores"
	if c.scale != "" {
		inits = append(inits, onnxtest.Init("c", nd.Scalar(float32(math.Sqrt(float64(c.d))))))
		ns = append(ns, onnxtest.Node("Div", []string{last, "c"}, []string{"scaled"}))
		last = "scaled"
	}
	inputs, feed := []*onnxpb.ValueInfoProto{qv, kv, vv}, []nd.Array{q, k, v}
	if c.mask != "" {
		m := randF32(r, b, 1, 1, c.kv)
		inputs, feed = append(inputs, onnxtest.Value("mask", nd.Float32, b, 1, 1, c.kv)), append(feed, m)
		ns = append(ns, onnxtest.Node("Add", []string{last, "mask"}, []string{"masked"}))
		last = "masked"
	}
	ns = append(ns, onnxtest.Node("Softmax", []string{last}, []string{"probs"}),
		onnxtest.Node("Transpose", []string{"V"}, []string{"Vh"}, onnxtest.Ints("perm", 0, 2, 1, 3)),
		onnxtest.Node("MatMul", []string{"probs", "Vh"}, []string{"o"}),
		onnxtest.Node("Transpose", []string{"o"}, []string{"y"}, onnxtest.Ints("perm", 0, 2, 1, 3)))
	return onnxtest.Model(c.opset, ns, inputs, []*onnxpb.ValueInfoProto{onnxtest.ValueNoShape("y", nd.Float32)}, inits...), feed
}

func (c attnCase) ops() []string {
	ops := []string{"MatMul"}
	if c.transposeK {
		ops = []string{"Transpose", "MatMul"}
	}
	if c.heads {
		ops = []string{"Transpose", "Transpose", "Transpose", "MatMul"}
		if c.scale != "" {
			ops = append(ops, "Div")
		}
		if c.mask != "" {
			ops = append(ops, "Add")
		}
		return append(ops, "Softmax", "MatMul", "Transpose")
	}
	switch c.scale {
	case "Div":
		ops = append(ops, "Div")
	case "Mul", "MulFirst":
		ops = append(ops, "Mul")
	}
	if c.mask != "" {
		ops = append(ops, "Add")
	}
	return append(ops, "Softmax", "MatMul")
}

// attnCases are random shapes (no batch axes, batch and heads, one query,
// one key, odd sizes) with every scale and mask form, and fixed ones of
// many query blocks and long key rows.
func attnCases(r *rand.Rand, trials int) []attnCase {
	scales := []string{"", "Div", "Mul", "MulFirst"}
	masks := []string{"", "row", "full", "keys", "first"}
	cases := []attnCase{
		{batch: []int{2, 4}, s: 128, kv: 128, d: 32, dv: 32, scale: "Div", mask: "row", transposeK: true, opset: 14},
		{batch: []int{1, 2}, s: 300, kv: 700, d: 16, dv: 24, scale: "Mul", mask: "full", opset: 14},
		{batch: []int{3}, s: 70, kv: 1, d: 5, dv: 3, mask: "keys", opset: 11},
		{batch: []int{8, 4}, s: 128, kv: 128, d: 64, dv: 64, scale: "Div", mask: "row", heads: true, opset: 14},
		{batch: []int{2, 3}, s: 5, kv: 1, d: 1, dv: 7, heads: true, opset: 13},
	}
	for len(cases) < trials {
		c := attnCase{s: 1 + r.IntN(40), kv: 1 + r.IntN(40), d: 1 + r.IntN(20), dv: 1 + r.IntN(20),
			scale: scales[r.IntN(len(scales))], mask: masks[r.IntN(len(masks))], transposeK: r.IntN(2) == 0, opset: []int{11, 13, 14}[r.IntN(3)]}
		for range r.IntN(3) {
			c.batch = append(c.batch, 1+r.IntN(4))
		}
		if c.mask == "row" && len(c.batch) == 0 {
			continue
		}
		if len(c.batch) == 2 && c.opset >= 13 && r.IntN(2) == 0 {
			c.heads = true
		}
		cases = append(cases, c)
	}
	return cases
}

// A fused attention step gives the unfused plan's outputs bit for bit, in
// one step where it had three to five.
func TestFusedAttentionEqualsUnfused(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	for i, c := range attnCases(r, 120) {
		mp, feed := c.model(r)
		what := fmt.Sprintf("case %d: %v", i, c)
		pf, pp := fusedAndPlain(t, mp, feed, what)

		ops := c.ops()
		steps := pf.StepOps()
		require.Equal(t, strings.Join(ops, "+"), steps[len(steps)-1], "case %d: %v", i, c)
		require.Len(t, steps, len(pp.StepOps())-len(ops)+1, "case %d: %v", i, c)
		require.Equal(t, pp.ProductFLOPs(), pf.ProductFLOPs(), "case %d: %v", i, c)
		if c.s*c.kv > 10000 {
			require.Less(t, pf.WorkspaceBytes(), pp.WorkspaceBytes(), "case %d: %v: the scores are not placed", i, c)
		}

		requireSameBits(t, pf, pp, feed, what)
	}
}

// What is not attention: a softmax along another axis than the last, a
// LogSoftmax, scores that are also a graph output.
func TestAttentionFusionLeavesWhatItMustNot(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 84))
	q, kt, v := randF32(r, 2, 3, 4), randF32(r, 2, 4, 3), randF32(r, 2, 3, 5)
	ins := []*onnxpb.ValueInfoProto{onnxtest.Value("Q", nd.Float32, 2, 3, 4), onnxtest.Value("Kt", nd.Float32, 2, 4, 3), onnxtest.Value("V", nd.Float32, 2, 3, 5)}
	qk := onnxtest.Node("MatMul", []string{"Q", "Kt"}, []string{"s"})
	pv := onnxtest.Node("MatMul", []string{"p", "V"}, []string{"y"})
	out := func(names ...string) []*onnxpb.ValueInfoProto {
		var vs []*onnxpb.ValueInfoProto
		for _, n := range names {
			vs = append(vs, onnxtest.ValueNoShape(n, nd.Float32))
		}
		return vs
	}
	for name, c := range map[string]struct {
		m   *onnxpb.ModelProto
		ops []string
	}{
		"softmax along queries": {onnxtest.Model(13, nodes{qk, onnxtest.Node("Softmax", []string{"s"}, []string{"p"}, onnxtest.Int("axis", 1)), pv}, ins, out("y")),
			[]string{"MatMul", "Softmax", "MatMul"}},
		"log-softmax": {onnxtest.Model(13, nodes{qk, onnxtest.Node("LogSoftmax", []string{"s"}, []string{"p"}), pv}, ins, out("y")),
			[]string{"MatMul", "LogSoftmax", "MatMul"}},
		"scores an output": {onnxtest.Model(13, nodes{qk, onnxtest.Node("Softmax", []string{"s"}, []string{"p"}), pv}, ins, out("y", "s")),
			[]string{"MatMul", "Softmax", "MatMul"}},
		"coerced softmax (opset 11, axis 1)": {onnxtest.Model(11, nodes{qk, onnxtest.Node("Softmax", []string{"s"}, []string{"p"}), pv}, ins, out("y")),
			[]string{"MatMul", "Softmax", "MatMul"}},
	} {
		m, err := onnxtest.Load(c.m)
		require.NoError(t, err, name)
		p, err := m.Plan([]nd.Array{q, kt, v})
		require.NoError(t, err, name)
		require.Equal(t, c.ops, p.StepOps(), name)
	}
}

// On the device (the emulator) a fused attention step runs the operators'
// launches over its score buffer, never the host, and gives the CPU's
// outputs.
func TestFusedAttentionOnDevice(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(85, 86))
	for i, c := range attnCases(r, 30) {
		if i%2 == 1 { // the scores in chunks of one batch (along the first axis)
			old := onnx.SetAttentionScratch(1)
			defer onnx.SetAttentionScratch(old)
		} else {
			onnx.SetAttentionScratch(256 << 20)
		}
		n := c.s * c.kv * (c.d + c.dv)
		for _, b := range c.batch {
			n *= b
		}
		if n > 300000 {
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

// An Add that a LayerNormalization along the last axis alone reads is one
// step with it, the unfused plan's outputs bit for bit (same shapes, an
// operand broadcast along the rows as positions are, with and without B),
// on the CPU and on the device (the emulator, never the host); an Add that
// broadcasts along the last axis is not fused.
func TestFusedAddNormEqualsUnfused(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(87, 88))
	for i := range 60 {
		lead := []int{1 + r.IntN(4), 1 + r.IntN(30)}[:1+r.IntN(2)]
		n := 1 + r.IntN(70)
		if i == 0 {
			lead, n = []int{8, 128}, 256
		}
		shape := append(append([]int{}, lead...), n)
		bShape := shape
		switch r.IntN(4) {
		case 1:
			bShape = []int{n}
		case 2:
			bShape = append([]int{1}, shape[1:]...)
		case 3:
			bShape = append(append([]int{}, shape[:len(shape)-1]...), 1) // along the last axis: not fused
		}
		withB := r.IntN(2) == 0
		inits := []onnxtest.Named{onnxtest.Init("scale", randF32(r, n))}
		lnIn := []string{"s", "scale"}
		if withB {
			inits = append(inits, onnxtest.Init("bias", randF32(r, n)))
			lnIn = append(lnIn, "bias")
		}
		mp := onnxtest.Model(17, nodes{onnxtest.Node("Add", []string{"A", "B"}, []string{"s"}), onnxtest.Node("LayerNormalization", lnIn, []string{"y"}, onnxtest.Int("axis", -1))},
			[]*onnxpb.ValueInfoProto{onnxtest.Value("A", nd.Float32, shape...), onnxtest.Value("B", nd.Float32, bShape...)},
			[]*onnxpb.ValueInfoProto{onnxtest.ValueNoShape("y", nd.Float32)}, inits...)
		feed := []nd.Array{randF32(r, shape...), randF32(r, bShape...)}
		what := fmt.Sprintf("case %d: %v + %v", i, shape, bShape)
		pf, pp := fusedAndPlain(t, mp, feed, what)
		want := []string{"Add+LayerNormalization"}
		if bShape[len(bShape)-1] != n {
			want = []string{"Add", "LayerNormalization"}
		}
		require.Equal(t, want, pf.StepOps(), what)
		requireSameBits(t, pf, pp, feed, what)
		ref, err := pp.Run(feed)
		require.NoError(t, err)
		w := nd.MustAs[float32](ref[0])
		if numel(shape) > 5000 {
			continue // the emulator runs a thread at a time
		}
		m, err := onnxtest.Load(mp)
		require.NoError(t, err)
		dv, onHost, err := runOnDevice(dev, m, feed)
		require.NoError(t, err)
		require.Empty(t, onHost)
		for j, v := range nd.MustAs[float32](dv[0]) {
			require.InDelta(t, w[j], v, 1e-4*(1+math.Abs(float64(w[j]))), "case %d: element %d", i, j)
		}
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
