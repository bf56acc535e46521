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

// The unary operators of ops_unary.go fuse into a Conv's epilogue as the
// other activations do: the fused Conv computes what the Conv and the
// operator compute apart, bit for bit on the CPU, and within 1e-4 on the
// emulated device (wholly there).
func TestUnaryFusesIntoConv(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(28, 20))
	for _, act := range []*onnxpb.NodeProto{
		onnxtest.Node("Mish", []string{"conv"}, []string{"y"}),
		onnxtest.Node("Gelu", []string{"conv"}, []string{"y"}),
		onnxtest.Node("Gelu", []string{"conv"}, []string{"y"}, onnxtest.String("approximate", "tanh")),
		onnxtest.Node("Softplus", []string{"conv"}, []string{"y"}),
		onnxtest.Node("Selu", []string{"conv"}, []string{"y"}),
		onnxtest.Node("Celu", []string{"conv"}, []string{"y"}, onnxtest.Float("alpha", 0.7)),
		onnxtest.Node("ThresholdedRelu", []string{"conv"}, []string{"y"}, onnxtest.Float("alpha", 0.2)),
		onnxtest.Node("Floor", []string{"conv"}, []string{"y"}),
		onnxtest.Node("Sin", []string{"conv"}, []string{"y"}),
	} {
		t.Run(act.GetOpType(), func(t *testing.T) {
			mp := onnxtest.Model(20, nodes{
				onnxtest.Node("Conv", []string{"x", "w", "b"}, []string{"conv"}, onnxtest.Ints("pads", 1, 1, 1, 1)),
				act,
			}, values{onnxtest.Value("x", nd.Float32, 2, 3, 6, 5)}, values{onnxtest.Value("y", nd.Float32)},
				onnxtest.Init("w", randF32(r, 4, 3, 3, 3)), onnxtest.Init("b", randF32(r, 4)))
			feed := []nd.Array{randF32(r, 2, 3, 6, 5)}
			m, err := onnxtest.Load(mp)
			require.NoError(t, err)
			pf, err := m.Plan(feed)
			require.NoError(t, err)
			assert.Equal(t, []string{"Conv+" + act.GetOpType()}, pf.StepOps())
			plain, err := onnxtest.Load(mp)
			require.NoError(t, err)
			old := onnx.SetFusion(false)
			pp, err := plain.Plan(feed)
			onnx.SetFusion(old)
			require.NoError(t, err)
			assert.Equal(t, []string{"Conv", act.GetOpType()}, pp.StepOps())
			got, err := pf.Run(feed)
			require.NoError(t, err)
			want, err := pp.Run(feed)
			require.NoError(t, err)
			g, w := nd.MustAs[float32](got[0]), nd.MustAs[float32](want[0])
			for j := range w {
				require.Equal(t, math.Float32bits(w[j]), math.Float32bits(g[j]), "element %d: fused %v, unfused %v", j, g[j], w[j])
			}
			dgot, onHost, err := runOnDevice(dev, m, feed)
			require.NoError(t, err)
			assert.Empty(t, onHost)
			d := nd.MustAs[float32](dgot[0])
			for j := range w {
				require.InDelta(t, w[j], d[j], 1e-4*(1+math.Abs(float64(w[j]))), "element %d", j)
			}
		})
	}
}
