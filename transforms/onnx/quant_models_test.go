package onnx_test

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The QDQ-quantized CNN of testdata/quant (containers/onnx/export_qdq.py:
// four convolutions and a MatMul, each between DequantizeLinear and
// QuantizeLinear, as ONNX Runtime's quantizer writes a model), its input
// and ONNX Runtime's two outputs for it: the logits and their uint8
// values.
const quantDir = "testdata/quant"

func qdqModel(t testing.TB) (*onnx.Model, nd.Array, []nd.Array) {
	m, err := onnxtest.LoadFile(filepath.Join(quantDir, "qdq-cnn.onnx"))
	require.NoError(t, err)
	in := onnxtest.ReadTensor(t, filepath.Join(quantDir, "qdq-cnn.input.pb"))
	want := []nd.Array{
		onnxtest.ReadTensor(t, filepath.Join(quantDir, "qdq-cnn.logits.pb")),
		onnxtest.ReadTensor(t, filepath.Join(quantDir, "qdq-cnn.logits_q.pb")),
	}
	return m, in, want
}

// countOps counts the plan's steps whose operator is op.
func countOps(p *onnx.Plan, op string) int {
	n := 0
	for _, s := range p.StepOps() {
		if s == op {
			n++
		}
	}
	return n
}

// TestQDQModel runs the QDQ CNN with its groups fused into integer
// products, as ONNX Runtime runs it: the same uint8 logits to the bit, and
// so the same float ones.
func TestQDQModel(t *testing.T) {
	m, in, want := qdqModel(t)
	p, err := m.Plan([]nd.Array{in})
	require.NoError(t, err)
	assert.Equal(t, 4, countOps(p, "DequantizeLinear+Conv+QuantizeLinear"), "steps: %s", strings.Join(p.StepOps(), " "))
	assert.Equal(t, 1, countOps(p, "DequantizeLinear+MatMul+QuantizeLinear"), "steps: %s", strings.Join(p.StepOps(), " "))
	for _, op := range p.StepOps() {
		assert.NotEqual(t, "Conv", op, "a Conv left unfused")
	}
	got, err := p.Run([]nd.Array{in})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, want[1].Type, got[1].Type)
	assert.Equal(t, want[1].Shape, got[1].Shape)
	assert.Equal(t, nd.MustAs[uint8](want[1]), nd.MustAs[uint8](got[1]), "logits_q")
	assert.NoError(t, compareOutput(got[0], want[0], t.Logf), "logits")
	assert.Equal(t, nd.MustAs[float32](want[0]), nd.MustAs[float32](got[0]), "logits")

	// A batch of 1 and of 6 (the rows repeated) give ONNX Runtime's rows.
	for _, n := range []int{1, 6} {
		got, err := m.Run([]nd.Array{repeatRows(in, n)})
		require.NoError(t, err)
		assert.Equal(t, nd.MustAs[uint8](repeatRows(want[1], n)), nd.MustAs[uint8](got[1]), "batch %d", n)
	}
}

// TestQDQModelUnfused runs the QDQ CNN as written, float convolutions of
// dequantized values (fusion off): its uint8 logits are within a quantum
// of the fused, integer ones (a float sum's rounding can fall on the
// other side of a half), and its float logits within that quantum.
func TestQDQModelUnfused(t *testing.T) {
	m, in, want := qdqModel(t)
	old := onnx.SetFusion(false)
	defer onnx.SetFusion(old)
	p, err := m.Plan([]nd.Array{in})
	require.NoError(t, err)
	assert.Zero(t, countOps(p, "DequantizeLinear+Conv+QuantizeLinear"))
	assert.Equal(t, 4, countOps(p, "Conv"))
	got, err := p.Run([]nd.Array{in})
	require.NoError(t, err)
	g, w := nd.MustAs[uint8](got[1]), nd.MustAs[uint8](want[1])
	differ := 0
	for i := range w {
		d := int(g[i]) - int(w[i])
		assert.LessOrEqual(t, d*d, 1, "logits_q element %d: %d, ONNX Runtime's (fused) %d", i, g[i], w[i])
		if d != 0 {
			differ++
		}
	}
	t.Logf("unfused: %d of %d quantized logits differ from ONNX Runtime's by a quantum", differ, len(w))
}

// TestQDQModelDevice runs the QDQ CNN on the emulated device, fused and
// unfused: wholly on it, ONNX Runtime's uint8 logits to the bit.
func TestQDQModelDevice(t *testing.T) {
	dev := emulator(t)
	for _, fused := range []bool{true, false} {
		m, in, want := qdqModel(t) // a model of its own: plans are kept per model
		old := onnx.SetFusion(fused)
		p, err := m.Plan([]nd.Array{in})
		require.NoError(t, err)
		assert.Equal(t, fused, countOps(p, "DequantizeLinear+Conv+QuantizeLinear") == 4, "fused %v: %s", fused, strings.Join(p.StepOps(), " "))
		got, onHost, err := runOnDevice(dev, m, []nd.Array{in})
		onnx.SetFusion(old)
		require.NoError(t, err, "fused %v", fused)
		assert.Empty(t, onHost, "nodes on the host, fused %v", fused)
		assert.Equal(t, nd.MustAs[uint8](want[1]), nd.MustAs[uint8](got[1]), "logits_q, fused %v", fused)
		assert.Equal(t, nd.MustAs[float32](want[0]), nd.MustAs[float32](got[0]), "logits, fused %v", fused)
	}
	assert.Positive(t, dev.Stats().Kernels["transforms/onnx.qconv"])
	assert.Positive(t, dev.Stats().Kernels["transforms/onnx.qmatmul"])
}

// BenchmarkQDQModel runs the QDQ CNN on a batch of 64, its groups fused
// into integer products and unfused (float products of dequantized
// values), in the same run.
func BenchmarkQDQModel(b *testing.B) {
	for _, fused := range []bool{true, false} {
		name := "unfused"
		if fused {
			name = "fused"
		}
		b.Run(name, func(b *testing.B) {
			m, in, _ := qdqModel(b) // a model of its own: plans are kept per model
			x := repeatRows(in, 64)
			old := onnx.SetFusion(fused)
			p, err := m.Plan([]nd.Array{x})
			onnx.SetFusion(old)
			require.NoError(b, err)
			_, err = p.Run([]nd.Array{x})
			require.NoError(b, err)
			b.ResetTimer()
			for range b.N {
				if _, err := p.Run([]nd.Array{x}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// qdqGroup is a model of one QDQ convolution group: uint8 x [n, c, side,
// side] -> DequantizeLinear -> Conv (3x3, pads 1, group g, int8 weights per
// channel, an int32 bias) -> QuantizeLinear -> uint8 y.
func qdqGroup(t testing.TB, n, c, m, side, g int) (*onnx.Model, nd.Array) {
	model, err := onnxtest.Load(qdqGroupProto(n, c, m, side, g))
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(13, 14))
	x := make([]uint8, n*c*side*side)
	for i := range x {
		x[i] = uint8(r.IntN(256))
	}
	return model, nd.Of(x, n, c, side, side)
}

// qdqGroupProto is qdqGroup's model, its weights seeded.
func qdqGroupProto(n, c, m, side, g int) *onnxpb.ModelProto {
	r := rand.New(rand.NewPCG(11, 12))
	w := make([]int8, m*c/g*9)
	for i := range w {
		w[i] = int8(r.IntN(127) - 63)
	}
	ws, bs, bias := make([]float32, m), make([]float32, m), make([]int32, m)
	for i := range ws {
		ws[i] = 0.001 * float32(i+1)
		bs[i] = float32(0.02) * ws[i]
		bias[i] = int32(r.IntN(2000) - 1000)
	}
	return onnxtest.Model(13, []*onnxpb.NodeProto{
		onnxtest.Node("DequantizeLinear", []string{"x", "xs", "xz"}, []string{"xf"}),
		onnxtest.Node("DequantizeLinear", []string{"w", "ws", "wz"}, []string{"wf"}, onnxtest.Int("axis", 0)),
		onnxtest.Node("DequantizeLinear", []string{"b", "bs", "bz"}, []string{"bf"}, onnxtest.Int("axis", 0)),
		onnxtest.Node("Conv", []string{"xf", "wf", "bf"}, []string{"yf"}, onnxtest.Ints("pads", 1, 1, 1, 1), onnxtest.Int("group", int64(g))),
		onnxtest.Node("QuantizeLinear", []string{"yf", "ys", "yz"}, []string{"y"}),
	}, []*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Uint8, n, c, side, side)}, []*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Uint8, n, m, side, side)},
		onnxtest.Init("xs", nd.Scalar[float32](0.02)), onnxtest.Init("xz", nd.Scalar[uint8](128)),
		onnxtest.Init("w", nd.Of(w, m, c/g, 3, 3)), onnxtest.Init("ws", nd.Of(ws, m)), onnxtest.Init("wz", nd.Zeros(nd.Int8, m)),
		onnxtest.Init("b", nd.Of(bias, m)), onnxtest.Init("bs", nd.Of(bs, m)), onnxtest.Init("bz", nd.Zeros(nd.Int32, m)),
		onnxtest.Init("ys", nd.Scalar[float32](0.05)), onnxtest.Init("yz", nd.Scalar[uint8](100)))
}

// BenchmarkQDQConv runs one QDQ convolution group fused (an integer
// product) and unfused (DequantizeLinear, a float Conv, QuantizeLinear) in
// the same run: ResNet's 3x3 layer (64 channels, 56x56, batch 8), a thin
// one (16 channels, 32x32, batch 8) and a depthwise one (64 channels).
func BenchmarkQDQConv(b *testing.B) {
	for _, c := range []struct {
		name             string
		n, c, m, side, g int
	}{
		{"3x3_64x56x56_b8", 8, 64, 64, 56, 1},
		{"3x3_16x32x32_b8", 8, 16, 16, 32, 1},
		{"dw3x3_64x56x56_b8", 8, 64, 64, 56, 64},
	} {
		for _, fused := range []bool{true, false} {
			name := c.name + "/unfused"
			if fused {
				name = c.name + "/fused"
			}
			b.Run(name, func(b *testing.B) {
				m, x := qdqGroup(b, c.n, c.c, c.m, c.side, c.g)
				old := onnx.SetFusion(fused)
				p, err := m.Plan([]nd.Array{x})
				onnx.SetFusion(old)
				require.NoError(b, err)
				_, err = p.Run([]nd.Array{x})
				require.NoError(b, err)
				b.ResetTimer()
				for range b.N {
					if _, err := p.Run([]nd.Array{x}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// A fused QDQ convolution group gives QLinearConv's outputs to the bit
// (the same constants as one QLinearConv node), and the unfused group,
// float products of dequantized values, is within a quantum of them: on
// a thick, a thin and a depthwise layer.
func TestQDQConvFusedIsQLinearConv(t *testing.T) {
	for _, c := range []struct{ n, c, m, side, g int }{{2, 64, 32, 12, 1}, {2, 16, 16, 9, 1}, {2, 32, 32, 10, 32}} {
		m, x := qdqGroup(t, c.n, c.c, c.m, c.side, c.g)
		p, err := m.Plan([]nd.Array{x})
		require.NoError(t, err)
		require.Equal(t, []string{"DequantizeLinear+Conv+QuantizeLinear"}, p.StepOps(), "%+v", c)
		fused, err := p.Run([]nd.Array{x})
		require.NoError(t, err)

		// The same constants as a QLinearConv node.
		inits := map[string]nd.Array{}
		mp := qdqGroupProto(c.n, c.c, c.m, c.side, c.g)
		for _, init := range mp.Graph.Initializer {
			a, err := onnx.ArrayOf(init, init.GetName())
			require.NoError(t, err)
			inits[init.GetName()] = a
		}
		q, err := onnxtest.Load(opModel(10, "QLinearConv", []nd.Array{x, inits["xs"], inits["xz"], inits["w"], inits["ws"], inits["wz"], inits["ys"], inits["yz"], inits["b"]},
			[]bool{false, true, true, true, true, true, true, true, true}, []string{"y:uint8"}, onnxtest.Ints("pads", 1, 1, 1, 1), onnxtest.Int("group", int64(c.g))))
		require.NoError(t, err)
		want, err := q.Run([]nd.Array{x})
		require.NoError(t, err)
		assert.Equal(t, want[0].Data, fused[0].Data, "fused, %+v", c)

		old := onnx.SetFusion(false)
		m2, _ := qdqGroup(t, c.n, c.c, c.m, c.side, c.g)
		unfused, err := m2.Run([]nd.Array{x})
		onnx.SetFusion(old)
		require.NoError(t, err)
		differ := 0
		for i, v := range nd.MustAs[uint8](unfused[0]) {
			d := int(v) - int(nd.MustAs[uint8](want[0])[i])
			require.LessOrEqual(t, d*d, 1, "unfused element %d, %+v", i, c)
			if d != 0 {
				differ++
			}
		}
		t.Logf("%+v: unfused differs from QLinearConv by a quantum in %d of %d values", c, differ, len(fused[0].Data))
	}
}
