package onnx_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
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
	m, in, want := qdqModel(t)
	for _, fused := range []bool{true, false} {
		old := onnx.SetFusion(fused)
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
