package onnx_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A BatchNormalization after a Conv is folded into the Conv's weights and
// bias at load (it is gone from the graph), and the model computes what the
// two operators compute one after the other: the Conv alone, then the
// normalization in float64, to float32 rounding. Where folding would change
// what the graph computes or exposes (the Conv's output read elsewhere or a
// graph output, training mode) the BatchNormalization stays. The folded
// graph is what the executor is sent, and it runs the same there.
func TestBatchNormFoldedIntoConv(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	floats := func(n int, lo, hi float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = lo + (hi-lo)*rng.Float32()
		}
		return v
	}
	const n, c, m, h, w = 2, 3, 4, 5, 5
	x := nd.Of(floats(n*c*h*w, -1, 1), n, c, h, w)
	weights := nd.Of(floats(m*c*3*3, -1, 1), m, c, 3, 3)
	bias := nd.Of(floats(m, -1, 1), m)
	scale, beta, mean := floats(m, 0.5, 2), floats(m, -1, 1), floats(m, -1, 1)
	variance := floats(m, 0.1, 2)
	const eps = 1e-3
	bnInits := []onnxtest.Named{
		onnxtest.Init("scale", nd.Of(scale, m)), onnxtest.Init("beta", nd.Of(beta, m)),
		onnxtest.Init("mean", nd.Of(mean, m)), onnxtest.Init("var", nd.Of(variance, m)),
	}
	pads := onnxtest.Ints("pads", 1, 1, 1, 1)
	in := []*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, c, h, w)}
	out := func(names ...string) []*onnxpb.ValueInfoProto {
		var vs []*onnxpb.ValueInfoProto
		for _, name := range names {
			vs = append(vs, onnxtest.Value(name, nd.Float32, -1, m, h, w))
		}
		return vs
	}
	bn := onnxtest.Node("BatchNormalization", []string{"conv", "scale", "beta", "mean", "var"}, []string{"y"}, onnxtest.Float("epsilon", eps))
	run := func(t *testing.T, mp *onnxpb.ModelProto) (*onnx.Model, []nd.Array) {
		t.Helper()
		model, err := onnxtest.Load(mp)
		require.NoError(t, err)
		got, err := model.Run([]nd.Array{x})
		require.NoError(t, err)
		return model, got
	}
	// want: the Conv alone, then the normalization in float64.
	want := func(t *testing.T, withBias bool) []float32 {
		inputs := []string{"x", "w"}
		inits := []onnxtest.Named{onnxtest.Init("w", weights)}
		if withBias {
			inputs = append(inputs, "b")
			inits = append(inits, onnxtest.Init("b", bias))
		}
		_, y := run(t, onnxtest.Model(17, []*onnxpb.NodeProto{onnxtest.Node("Conv", inputs, []string{"conv"}, pads)}, in, out("conv"), inits...))
		v := nd.MustAs[float32](y[0])
		res := make([]float32, len(v))
		for i, a := range v {
			ch := i / (h * w) % m
			s := float64(scale[ch]) / math.Sqrt(float64(variance[ch])+eps)
			res[i] = float32((float64(a)-float64(mean[ch]))*s + float64(beta[ch]))
		}
		return res
	}
	close := func(t *testing.T, want, got []float32) {
		t.Helper()
		require.Len(t, got, len(want))
		for i := range want {
			assert.InDelta(t, want[i], got[i], 1e-5*(1+math.Abs(float64(want[i]))), "element %d", i)
		}
	}

	for _, withBias := range []bool{true, false} {
		inputs := []string{"x", "w"}
		inits := append([]onnxtest.Named{onnxtest.Init("w", weights)}, bnInits...)
		if withBias {
			inputs = append(inputs, "b")
			inits = append(inits, onnxtest.Init("b", bias))
		}
		mp := onnxtest.Model(17, []*onnxpb.NodeProto{onnxtest.Node("Conv", inputs, []string{"conv"}, pads), bn}, in, out("y"), inits...)
		model, got := run(t, mp)
		assert.Equal(t, []string{"Conv"}, model.OpsUsed(), "bias %v: the BatchNormalization is folded", withBias)
		close(t, want(t, withBias), nd.MustAs[float32](got[0]))

		// The executor is sent the folded graph (Proto): built again, it
		// is the same model and computes the same.
		mp, data := model.Proto()
		for i, init := range mp.Graph.Initializer {
			init.RawData = data[i]
		}
		sent, err := onnx.FromProto(mp)
		require.NoError(t, err)
		assert.Equal(t, []string{"Conv"}, sent.OpsUsed())
		again, err := sent.Run([]nd.Array{x})
		require.NoError(t, err)
		assert.Equal(t, got[0].Data, again[0].Data)
	}

	// The Conv's output is also a graph output: not folded, and both
	// outputs are right.
	inits := append([]onnxtest.Named{onnxtest.Init("w", weights), onnxtest.Init("b", bias)}, bnInits...)
	conv := onnxtest.Node("Conv", []string{"x", "w", "b"}, []string{"conv"}, pads)
	model, got := run(t, onnxtest.Model(17, []*onnxpb.NodeProto{conv, bn}, in, out("y", "conv"), inits...))
	assert.Equal(t, []string{"BatchNormalization", "Conv"}, model.OpsUsed())
	close(t, want(t, true), nd.MustAs[float32](got[0]))

	// The Conv's output is read by another node too: not folded.
	relu := onnxtest.Node("Relu", []string{"conv"}, []string{"r"})
	model, got = run(t, onnxtest.Model(17, []*onnxpb.NodeProto{conv, bn, relu}, in, out("y", "r"), inits...))
	assert.Equal(t, []string{"BatchNormalization", "Conv", "Relu"}, model.OpsUsed())
	close(t, want(t, true), nd.MustAs[float32](got[0]))
}
