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

// layoutLayer is a Conv of a layout test's graph: its input value, output
// channels, kernel, stride, pads (top, left, bottom, right), dilation,
// depthwise or one group, an activation ("": none) and a residual value
// added before it ("": none).
type layoutLayer struct {
	op        string   // not a Conv: this operator, of ins (a MaxPool: of k, s, pads and dil)
	ins       []string // op's inputs
	in        string
	m, k, s   int
	pads      [4]int
	dil       int
	depthwise bool
	act, res  string
}

// layoutGraph is a graph of Convs (layer i's output "l<i>"), other
// operators reading some of them (op, input, output), and its outputs.
type layoutGraph struct {
	name       string
	n, c, h, w int
	z          []int // a second input Z of this shape ([n c h w]), or nil
	layers     []layoutLayer
	others     [][3]string // a Transpose's perm is 0, 2, 3, 1 (channels last)
	outputs    []string
	blocked    int // values the plan blocks (at batch n, with the blocked kernel)
	reorders   int // ReorderNCHWc steps
	// overwritten: the convolutions written over their residual
	// (Overwriter), with kernels of 16 and of 8 lanes (HardSwish within
	// the kernels of 16 lanes only: not over its residual).
	overwritten [2]int
	// channelsLast: the convolutions that write channels last (a
	// Transpose taken in).
	channelsLast int
	// pooled: the convolutions that pool their output (a MaxPool taken
	// in).
	pooled int
}

// model builds g's model and its inputs.
func (g layoutGraph) model(r *rand.Rand) (*onnxpb.ModelProto, []nd.Array) {
	shapes := map[string][4]int{"X": {g.n, g.c, g.h, g.w}}
	inputs := []*onnxpb.ValueInfoProto{onnxtest.Value("X", nd.Float32, g.n, g.c, g.h, g.w)}
	feed := []nd.Array{randF32(r, g.n, g.c, g.h, g.w)}
	if g.z != nil {
		shapes["Z"] = [4]int(g.z)
		inputs = append(inputs, onnxtest.Value("Z", nd.Float32, g.z...))
		feed = append(feed, randF32(r, g.z...))
	}
	var inits []onnxtest.Named
	var ns nodes
	for i, l := range g.layers {
		if l.op == "MaxPool" {
			name, x := fmt.Sprintf("l%d", i), shapes[l.ins[0]]
			ns = append(ns, onnxtest.Node(l.op, l.ins, []string{name}, onnxtest.Ints("kernel_shape", int64(l.k), int64(l.k)),
				onnxtest.Ints("strides", int64(l.s), int64(l.s)), onnxtest.Ints("dilations", int64(l.dil), int64(l.dil)),
				onnxtest.Ints("pads", int64(l.pads[0]), int64(l.pads[1]), int64(l.pads[2]), int64(l.pads[3]))))
			shapes[name] = [4]int{x[0], x[1], (x[2]+l.pads[0]+l.pads[2]-l.dil*(l.k-1)-1)/l.s + 1, (x[3]+l.pads[1]+l.pads[3]-l.dil*(l.k-1)-1)/l.s + 1}
			continue
		}
		if l.op != "" {
			name := fmt.Sprintf("l%d", i)
			ns = append(ns, onnxtest.Node(l.op, l.ins, []string{name}))
			sh := shapes[l.ins[0]]
			if l.op == "GlobalAveragePool" {
				sh[2], sh[3] = 1, 1
			}
			shapes[name] = sh
			continue
		}
		x := shapes[l.in]
		c, group := x[1], 1
		if l.depthwise {
			group = c
		}
		name := fmt.Sprintf("l%d", i)
		w, b := name+".w", name+".b"
		inits = append(inits, onnxtest.Init(w, randF32(r, l.m, c/group, l.k, l.k)), onnxtest.Init(b, randF32(r, l.m)))
		oh := (x[2]+l.pads[0]+l.pads[2]-l.dil*(l.k-1)-1)/l.s + 1
		ow := (x[3]+l.pads[1]+l.pads[3]-l.dil*(l.k-1)-1)/l.s + 1
		out := name
		if l.res != "" || l.act != "" {
			out = name + ".conv"
		}
		ns = append(ns, onnxtest.Node("Conv", []string{l.in, w, b}, []string{out}, onnxtest.Int("group", int64(group)),
			onnxtest.Ints("strides", int64(l.s), int64(l.s)), onnxtest.Ints("dilations", int64(l.dil), int64(l.dil)),
			onnxtest.Ints("pads", int64(l.pads[0]), int64(l.pads[1]), int64(l.pads[2]), int64(l.pads[3])),
			onnxtest.Ints("kernel_shape", int64(l.k), int64(l.k))))
		if l.res != "" {
			sum := name
			if l.act != "" {
				sum = name + ".sum"
			}
			ns = append(ns, onnxtest.Node("Add", []string{out, l.res}, []string{sum}))
			out = sum
		}
		if l.act != "" {
			ns = append(ns, onnxtest.Node(l.act, []string{out}, []string{name}))
		}
		shapes[name] = [4]int{x[0], l.m, oh, ow}
	}
	for _, o := range g.others {
		var attrs []*onnxpb.AttributeProto
		if o[0] == "Transpose" { // to channels last
			attrs = append(attrs, onnxtest.Ints("perm", 0, 2, 3, 1))
		}
		ns = append(ns, onnxtest.Node(o[0], []string{o[1]}, []string{o[2]}, attrs...))
	}
	var outs []*onnxpb.ValueInfoProto
	for _, o := range g.outputs {
		outs = append(outs, onnxtest.ValueNoShape(o, nd.Float32))
	}
	return onnxtest.Model(14, ns, inputs, outs, inits...), feed
}

// layoutGraphs are chains of blocked convolutions: channels not a multiple
// of the block, 1x1 convolutions read in place, stride 2, dilation, pads
// wider than the kernel and asymmetric, depthwise (one with a residual),
// residuals blocked with blocked and NCHW outputs, a residual from the
// graph's input (reordered), values read by other operators (NCHW), an
// activation that is not 0 at 0 (the channels past M), batch 1 and
// batches of thick channels, and max pooling of blocked values (a residual
// from one, padded and dilated windows, values below 0).
var layoutGraphs = []layoutGraph{
	{name: "resnet-like, odd channels", n: 1, c: 17, h: 12, w: 12, layers: []layoutLayer{
		{in: "X", m: 33, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
		{in: "l0", m: 80, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Sigmoid"},
		{in: "l1", m: 33, k: 1, s: 1, dil: 1, res: "l0", act: "Clip"},
		{in: "l2", m: 64, k: 3, s: 2, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "HardSwish"},
		{in: "l3", m: 64, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, depthwise: true, act: "Relu"},
		{in: "l4", m: 64, k: 1, s: 1, dil: 1, res: "l3"},
	}, outputs: []string{"l5"}, blocked: 5, overwritten: [2]int{1, 1}},
	{name: "reordered residual, other readers, pads", n: 1, c: 24, h: 9, w: 11, z: []int{1, 21, 9, 11}, layers: []layoutLayer{
		{in: "X", m: 21, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Reciprocal"},
		{in: "l0", m: 21, k: 3, s: 1, pads: [4]int{3, 1, 1, 3}, dil: 2, res: "Z", act: "Relu"},
		{in: "l1", m: 16, k: 3, s: 1, pads: [4]int{4, 4, 4, 4}, dil: 1},
		{in: "l2", m: 16, k: 5, s: 3, pads: [4]int{2, 0, 1, 2}, dil: 1, act: "Tanh"},
		{in: "l3", m: 20, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1},
	}, others: [][3]string{{"Sigmoid", "l2", "s2"}}, outputs: []string{"l4", "s2"}, blocked: 4, reorders: 1, overwritten: [2]int{0, 1}},
	{name: "narrow rows, residuals written over in a chain, Conv(X) + X", n: 2, c: 48, h: 7, w: 7, layers: []layoutLayer{
		{in: "X", m: 64, k: 1, s: 1, dil: 1, act: "Relu"},
		{in: "X", m: 48, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
		{in: "l1", m: 64, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, res: "l0", act: "Relu"}, // input blocks in chunks: not over l0
		{in: "l2", m: 64, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
		{in: "l3", m: 64, k: 1, s: 1, dil: 1, res: "l2", act: "Clip"}, // over l2
		{in: "l4", m: 64, k: 1, s: 1, dil: 1, act: "Relu"},
		{in: "l5", m: 64, k: 1, s: 1, dil: 1, res: "l4"}, // over l4, over l2
		{in: "l6", m: 64, k: 1, s: 1, dil: 1, res: "l6"}, // Conv(X) + X: not over X
		{in: "l7", m: 32, k: 1, s: 1, dil: 1, act: "Relu"},
	}, outputs: []string{"l8"}, blocked: 8, overwritten: [2]int{2, 3}},
	{name: "channels last after convolutions (ConvNeXt), a Transpose not taken", n: 2, c: 32, h: 10, w: 9, layers: []layoutLayer{
		{in: "X", m: 32, k: 7, s: 1, pads: [4]int{3, 3, 3, 3}, dil: 1, depthwise: true},
		{in: "X", m: 40, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
		{in: "l1", m: 24, k: 1, s: 1, dil: 1, act: "HardSwish"},
		{in: "l1", m: 24, k: 1, s: 2, dil: 1},
	}, others: [][3]string{{"Transpose", "l0", "t0"}, {"Transpose", "l2", "t2"}, {"Sigmoid", "t2", "s2"}, {"Transpose", "l3", "t3"}, {"GlobalAveragePool", "l3", "p3"}},
		outputs: []string{"t0", "s2", "t3", "p3"}, blocked: 1, channelsLast: 2},
	{name: "mobile-like: thin 1x1, wide depthwise, input residual", n: 2, c: 24, h: 20, w: 20, layers: []layoutLayer{
		{in: "X", m: 48, k: 1, s: 1, dil: 1, act: "HardSwish"},
		{in: "l0", m: 48, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, depthwise: true, act: "Relu"},
		{in: "l1", m: 24, k: 1, s: 1, dil: 1, res: "X", act: "HardSwish"},
		{in: "l2", m: 48, k: 1, s: 1, dil: 1},
	}, others: [][3]string{{"GlobalAveragePool", "l3", "pool"}}, outputs: []string{"pool"}, blocked: 5, reorders: 1, overwritten: [2]int{0, 1}},
	{name: "squeeze and excitation", n: 2, c: 24, h: 14, w: 14, layers: []layoutLayer{
		{in: "X", m: 40, k: 1, s: 1, dil: 1, act: "Relu"},
		{in: "l0", m: 40, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, depthwise: true, act: "Relu"},
		{op: "GlobalAveragePool", ins: []string{"l1"}},
		{in: "l2", m: 10, k: 1, s: 1, dil: 1, act: "Relu"},
		{in: "l3", m: 40, k: 1, s: 1, dil: 1},
		{op: "Sigmoid", ins: []string{"l4"}},
		{op: "Mul", ins: []string{"l1", "l5"}},
		{in: "l6", m: 24, k: 1, s: 1, dil: 1, res: "X"},
		{in: "l7", m: 40, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1},
		{op: "GlobalAveragePool", ins: []string{"l8"}},
		{op: "Mul", ins: []string{"l9", "l1"}},
		{in: "l10", m: 16, k: 3, s: 2, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
	}, outputs: []string{"l8", "l11"}, blocked: 6, reorders: 1, overwritten: [2]int{1, 1}},
	{name: "batch, thick channels", n: 3, c: 67, h: 10, w: 10, layers: []layoutLayer{
		{in: "X", m: 70, k: 1, s: 1, dil: 1, act: "Relu"},
		{in: "l0", m: 70, k: 3, s: 2, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
		{in: "l1", m: 96, k: 1, s: 1, dil: 1},
		{in: "l0", m: 96, k: 1, s: 2, dil: 1},
		{in: "l2", m: 96, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, res: "l3", act: "Relu"},
		{in: "l4", m: 96, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, depthwise: true, res: "l3", act: "Relu"},
	}, others: [][3]string{{"GlobalAveragePool", "l5", "pool"}}, outputs: []string{"pool"}, blocked: 6},
	{name: "stem and max pooling: residual from a pooling, padded and dilated windows", n: 2, c: 3, h: 19, w: 21, layers: []layoutLayer{
		{in: "X", m: 20, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
		{op: "MaxPool", ins: []string{"l0"}, k: 3, s: 2, pads: [4]int{1, 1, 1, 1}, dil: 1},
		{in: "l1", m: 20, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
		{in: "l2", m: 20, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, res: "l1"},
		{op: "MaxPool", ins: []string{"l3"}, k: 2, s: 1, pads: [4]int{1, 0, 0, 1}, dil: 2},
		{in: "l4", m: 33, k: 1, s: 1, dil: 1, act: "Tanh"},
		{op: "MaxPool", ins: []string{"l5"}, k: 3, s: 3, pads: [4]int{0, 2, 2, 0}, dil: 1},
		{in: "l6", m: 16, k: 1, s: 1, dil: 1},
		{op: "MaxPool", ins: []string{"l7"}, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1},
	}, outputs: []string{"l8"}, blocked: 5, overwritten: [2]int{0, 1}, pooled: 2},
}

// pooledGraph is a chain of convolutions each pooled (their MaxPools
// taken in): 16 input channels and more, output channels not a multiple
// of the block (Sigmoid: not 0 at 0), stride 2, asymmetric pads, dilated
// windows, windows of padding alone, a pointwise convolution.
var pooledGraph = layoutGraph{name: "pooled convolutions", n: 1, c: 24, h: 23, w: 21, layers: []layoutLayer{
	{in: "X", m: 40, k: 3, s: 1, pads: [4]int{1, 1, 1, 1}, dil: 1, act: "Relu"},
	{op: "MaxPool", ins: []string{"l0"}, k: 3, s: 2, pads: [4]int{1, 1, 1, 1}, dil: 1},
	{in: "l1", m: 36, k: 3, s: 2, pads: [4]int{1, 0, 1, 1}, dil: 1, act: "Sigmoid"},
	{op: "MaxPool", ins: []string{"l2"}, k: 2, s: 1, pads: [4]int{1, 0, 0, 1}, dil: 2},
	{in: "l3", m: 16, k: 1, s: 1, dil: 1, act: "Relu"},
	{op: "MaxPool", ins: []string{"l4"}, k: 3, s: 3, pads: [4]int{0, 2, 2, 0}, dil: 1},
	{in: "l5", m: 16, k: 1, s: 1, dil: 1},
}, outputs: []string{"l6"}, blocked: 3, pooled: 3}

func init() { layoutGraphs = append(layoutGraphs, pooledGraph) }

// A plan with the blocked layout gives the NCHW plan's outputs bit for bit
// (the blocked kernel computes each sum in the same order whatever the
// layout), blocks the values it should and reorders what it must.
func TestLayoutEqualsNCHW(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	defer onnx.SetLayoutPoolBytes(onnx.SetLayoutPoolBytes(0)) // pooled however small
	saved := onnx.SetNCHWcWidth(0)
	defer onnx.SetNCHWcWidth(saved)
	loops := onnx.SetBlockLoops(true)
	defer onnx.SetBlockLoops(loops)
	for i, width := range append(onnx.SIMDWidths(), -1) {
		if width == -1 { // the widest, the layout's loops in Go, a task an image
			width = onnx.SIMDWidths()[0]
			onnx.SetBlockLoops(false)
			defer onnx.SetNCHWcTasks(onnx.SetNCHWcTasks(0))
		}
		onnx.SetNCHWcWidth(width)
		for _, g := range layoutGraphs {
			what := fmt.Sprintf("%s, %d lanes (%d)", g.name, width, i)
			mp, feed := g.model(r)
			pb, pp := layoutAndPlain(t, mp, feed, what)
			if onnx.BlockedKernel() {
				require.Equal(t, g.blocked, onnx.BlockedValues(pb), "%s: blocked values; steps %v", what, pb.StepOps())
				require.Equal(t, g.reorders, strings.Count(strings.Join(pb.StepOps(), " "), "ReorderNCHWc"), "%s: %v", what, pb.StepOps())
				over := g.overwritten[0]
				if width < 16 {
					over = g.overwritten[1]
				}
				require.Equal(t, over, onnx.Overwritten(pb), "%s: outputs written over their residual", what)
				require.Equal(t, g.channelsLast, strings.Count(strings.Join(pb.StepOps(), " "), "+Transpose"), "%s: %v", what, pb.StepOps())
				require.Equal(t, g.pooled, strings.Count(strings.Join(pb.StepOps(), " "), "+MaxPool"), "%s: %v", what, pb.StepOps())
			} else {
				require.Zero(t, onnx.BlockedValues(pb), what)
			}
			require.Zero(t, onnx.BlockedValues(pp), what)
			require.Zero(t, onnx.Overwritten(pp), what)
			requireSameOutputs(t, pb, pp, feed, what)
		}
	}
}

// A plan that writes a convolution's output over its residual where the
// input blocks come in chunks on narrow rows (planned for other chunks
// than the run takes: the plan would not, Overwriter) gives the NCHW
// plan's outputs: the run copies the residual aside before the first
// chunk's sums land on it.
func TestOverwriteChunked(t *testing.T) {
	if !onnx.BlockedKernel() {
		t.Skip("no blocked kernel here")
	}
	g := layoutGraphs[2]
	require.Contains(t, g.name, "narrow rows")
	mp, feed := g.model(rand.New(rand.NewPCG(75, 76)))
	saved := onnx.SetNCHWcChunkBytes(1 << 30) // every input block a call: the narrow layer written over l0 too
	pb, pp := layoutAndPlain(t, mp, feed, g.name)
	onnx.SetNCHWcChunkBytes(saved)
	require.Equal(t, 3, onnx.Overwritten(pb), "%s: %v", g.name, pb.StepOps())
	requireSameOutputs(t, pb, pp, feed, g.name)
}

// A convolution that pools its output gives the NCHW plan's outputs in
// bands of every size (an output row a band: the rows its windows share
// moved each time) and batch (rows of the output in chunks, a task an
// image), with the Go loops too. Outputs under layoutPoolBytes are not
// pooled so.
func TestPooledBands(t *testing.T) {
	if !onnx.BlockedKernel() {
		t.Skip("no blocked kernel here")
	}
	r := rand.New(rand.NewPCG(77, 78))
	mp, feed := pooledGraph.model(r)
	pb, _ := layoutAndPlain(t, mp, feed, pooledGraph.name)
	require.NotContains(t, strings.Join(pb.StepOps(), " "), "+MaxPool", "outputs of a few kB")
	defer onnx.SetLayoutPoolBytes(onnx.SetLayoutPoolBytes(0))
	for _, bytes := range []int{1, 6 << 10, 1 << 30} {
		saved := onnx.SetNCHWcPoolBandBytes(bytes)
		for _, n := range []int{1, 3, 17} {
			for _, vector := range []bool{true, false} {
				loops := onnx.SetBlockLoops(vector)
				for _, g := range layoutGraphs[len(layoutGraphs)-2:] {
					g.n = n
					what := fmt.Sprintf("%s, batch %d, bands of %d bytes, vector %v", g.name, n, bytes, vector)
					mp, feed := g.model(r)
					pb, pp := layoutAndPlain(t, mp, feed, what)
					require.Equal(t, g.pooled, strings.Count(strings.Join(pb.StepOps(), " "), "+MaxPool"), "%s: %v", what, pb.StepOps())
					requireSameOutputs(t, pb, pp, feed, what)
				}
				onnx.SetBlockLoops(loops)
			}
		}
		onnx.SetNCHWcPoolBandBytes(saved)
	}
}

// layoutAndPlain plans model mp for feed twice, with the blocked layout and
// without.
func layoutAndPlain(t *testing.T, mp *onnxpb.ModelProto, feed []nd.Array, what string) (blocked, plain *onnx.Plan) {
	t.Helper()
	mb, err := onnxtest.Load(mp)
	require.NoError(t, err, what)
	blocked, err = mb.Plan(feed)
	require.NoError(t, err, what)
	old := onnx.SetLayout(false)
	defer onnx.SetLayout(old)
	mu, err := onnxtest.Load(mp)
	require.NoError(t, err, what)
	plain, err = mu.Plan(feed)
	require.NoError(t, err, what)
	return blocked, plain
}

// requireSameOutputs runs the blocked plan a and the NCHW plan b on feed,
// each convolution that the blocked kernel can compute computed by it
// (SetLayout(false)), by the direct kernel (not Winograd's, which only
// blocked values take: TestWinogradModels), and requires every output to
// be the same shape and bits.
func requireSameOutputs(t *testing.T, a, b *onnx.Plan, feed []nd.Array, what string) {
	t.Helper()
	old := onnx.SetLayout(false)
	defer onnx.SetLayout(old)
	defer onnx.SetWinograd(onnx.SetWinograd(false))
	got, err := a.Run(feed)
	require.NoError(t, err, what)
	want, err := b.Run(feed)
	require.NoError(t, err, what)
	require.Len(t, got, len(want), what)
	for i := range want {
		require.Equal(t, want[i].Shape, got[i].Shape, what)
		require.Equal(t, want[i].Data, got[i].Data, "%s: output %d", what, i)
	}
}

// The test models planned with the blocked layout give the NCHW plans'
// outputs bit for bit, at batch 1 and 6; ResNet's and MobileNetV2's keep
// values blocked at batch 1.
func TestLayoutModels(t *testing.T) {
	for _, tm := range testModels(t) {
		in := onnxtest.ReadTensor(t, tm.Input)
		for _, n := range []int{1, 6} {
			feed := []nd.Array{repeatRows(in, n)}
			mb, err := onnxtest.LoadFile(tm.Model)
			require.NoError(t, err)
			saved := onnx.SetLayoutPoolBytes(0) // the stems' convolutions pool their outputs however small
			if n == 1 {
				onnx.SetLayoutPoolBytes(saved)
			}
			pb, err := mb.Plan(feed)
			onnx.SetLayoutPoolBytes(saved)
			require.NoError(t, err)
			if n == 6 && onnx.BlockedKernel() && strings.HasPrefix(tm.Name, "resnet") {
				require.Contains(t, strings.Join(pb.StepOps(), " "), "Conv+Relu+MaxPool", tm.Name)
			}
			old := onnx.SetLayout(false)
			mp, err := onnxtest.LoadFile(tm.Model)
			require.NoError(t, err)
			pp, err := mp.Plan(feed)
			onnx.SetLayout(old)
			require.NoError(t, err)
			if n == 1 && onnx.BlockedKernel() && !strings.HasPrefix(tm.Name, "transformer") && !strings.HasPrefix(tm.Name, "unet") {
				require.Positive(t, onnx.BlockedValues(pb), "%s: %v", tm.Name, pb.StepOps())
			}
			requireSameOutputs(t, pb, pp, feed, fmt.Sprintf("%s batch %d", tm.Name, n))
		}
	}
}

// The test ResNet's 3x3 convolutions of 32 and 64 channels, blocked in and
// out, by Winograd's F(2x2, 3x3) give the direct kernel's outputs within
// float32 rounding (not its bits: the path was taken), at batch 1 and 6.
func TestWinogradModels(t *testing.T) {
	if !onnx.BlockedKernel() {
		t.Skip("no blocked kernel here")
	}
	tm := testModels(t)[0]
	require.True(t, strings.HasPrefix(tm.Name, "resnet"), tm.Name)
	in := onnxtest.ReadTensor(t, tm.Input)
	for _, n := range []int{1, 6} {
		feed := []nd.Array{repeatRows(in, n)}
		m, err := onnxtest.LoadFile(tm.Model)
		require.NoError(t, err)
		p, err := m.Plan(feed)
		require.NoError(t, err)
		old := onnx.SetWinograd(false)
		want, err := p.Run(feed)
		onnx.SetWinograd(true)
		require.NoError(t, err)
		got, err := p.Run(feed)
		onnx.SetWinograd(old)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for i := range want {
			w, g := nd.MustAs[float32](want[i]), nd.MustAs[float32](got[i])
			require.NotEqual(t, w, g, "batch %d: output %d the direct kernel's bits", n, i)
			for j := range w {
				require.InDelta(t, w[j], g[j], 1e-4*(1+math.Abs(float64(w[j]))), "batch %d: output %d element %d", n, i, j)
			}
		}
	}
}

// On the device (the emulator) a blocked plan's steps are the Convs and
// MaxPools they replace and copies, never the host, and give the NCHW plan's outputs on
// the device bit for bit.
func TestLayoutOnDevice(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(73, 74))
	defer onnx.SetLayoutPoolBytes(onnx.SetLayoutPoolBytes(0))
	for _, g := range append(layoutGraphs[:4:4], layoutGraphs[len(layoutGraphs)-2:]...) { // the third: residuals written over; the fourth: channels last; the last two: max pooling, taken in
		mp, feed := g.model(r)
		m, err := onnxtest.Load(mp)
		require.NoError(t, err)
		if onnx.BlockedKernel() { // the device's plan is the CPU's: its steps take the MaxPools in
			p, err := m.Plan(feed)
			require.NoError(t, err)
			require.Equal(t, g.pooled, strings.Count(strings.Join(p.StepOps(), " "), "+MaxPool"), "%s: %v", g.name, p.StepOps())
		}
		got, onHost, err := runOnDevice(dev, m, feed)
		require.NoError(t, err, g.name)
		require.Empty(t, onHost, g.name)
		old := onnx.SetLayout(false)
		mu, err := onnxtest.Load(mp)
		require.NoError(t, err)
		want, _, err := runOnDevice(dev, mu, feed)
		onnx.SetLayout(old)
		require.NoError(t, err, g.name)
		require.Len(t, got, len(want), g.name)
		for i := range want {
			require.Equal(t, want[i].Data, got[i].Data, "%s: output %d", g.name, i)
		}
	}
}
