package onnx_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// rnnCasesDir holds the recurrent and GroupNormalization cases that ONNX's
// conformance data (ONNX 1.12) lacks, and two sequence classifiers
// exported from PyTorch, with ONNX Runtime's outputs
// (containers/onnx/export_rnn_cases.py), in the layout of ONNX's test data.
const rnnCasesDir = "testdata/rnn"

// TestRecurrentCases runs each case on the CPU and on the emulated device
// (where RNN, GRU and LSTM run on the host) and holds
// every output to ONNX Runtime's (1e-4 relative).
func TestRecurrentCases(t *testing.T) {
	dev := emulator(t)
	dirs, err := filepath.Glob(filepath.Join(rnnCasesDir, "*", "model.onnx"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(dirs), 14)
	for _, model := range dirs {
		dir := filepath.Dir(model)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, err := onnxtest.LoadFile(model)
			require.NoError(t, err)
			inputs, outputs := onnxtest.DataSets(t, dir)
			require.NotEmpty(t, inputs)
			in, want := inputs[0], outputs[0]
			require.NotEmpty(t, want)
			got, err := m.Run(in)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range want {
				assert.NoError(t, compareOutput(got[i], want[i], t.Logf), "CPU output %d", i)
			}
			dgot, onHost, err := runOnDevice(dev, m, in)
			require.NoError(t, err)
			for _, n := range onHost {
				assert.Regexp(t, `(?i)lstm|gru|rnn`, n, "only the operators without a device kernel run on the host")
			}
			for i := range want {
				assert.NoError(t, compareOutput(dgot[i], want[i], nil), "device output %d", i)
			}
		})
	}
}

// lstmModel is an LSTM node on X (seq 3, batch 2, input 4) with W, R of
// hidden size hidden and the sequence lengths as an input.
func lstmModel(wRows, hidden int, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
	w := nd.Zeros(nd.Float32, 1, wRows, 4)
	r := nd.Zeros(nd.Float32, 1, 4*hidden, hidden)
	node := onnxtest.Node("LSTM", []string{"X", "W", "R", "", "lens"}, []string{"Y"}, attrs...)
	node.Name = proto.String("encoder_lstm")
	return onnxtest.Model(14, []*onnxpb.NodeProto{node},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("X", nd.Float32, 3, 2, 4), onnxtest.Value("lens", nd.Int32, 2)},
		[]*onnxpb.ValueInfoProto{onnxtest.ValueNoShape("Y", nd.Float32)},
		onnxtest.Init("W", w), onnxtest.Init("R", r))
}

func TestRecurrentBadInput(t *testing.T) {
	x := nd.Zeros(nd.Float32, 3, 2, 4)
	for _, c := range []struct {
		name  string
		model *onnxpb.ModelProto
		lens  []int32
		want  string
	}{
		{"W's rows not gates times hidden", lstmModel(10, 3), []int32{3, 3}, "input W has shape [1x10x4]"},
		{"hidden_size disagrees with W", lstmModel(12, 3, onnxtest.Int("hidden_size", 5)), []int32{3, 3}, "hidden_size is 5, but W's shape"},
		{"R of another hidden size", lstmModel(16, 3), []int32{3, 3}, "input R has shape"},
		{"a length past the sequence", lstmModel(12, 3), []int32{3, 4}, "sequence_lens[1] is 4"},
		{"a negative length", lstmModel(12, 3), []int32{-1, 2}, "sequence_lens[0] is -1"},
		{"an unknown activation", lstmModel(12, 3, &onnxpb.AttributeProto{Name: proto.String("activations"), Type: onnxpb.AttributeProto_STRINGS.Enum(),
			Strings: [][]byte{[]byte("Sigmoid"), []byte("Tanh"), []byte("Swish")}}), []int32{3, 3}, `activation "Swish"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := onnxtest.Load(c.model)
			if err == nil {
				_, err = m.Run([]nd.Array{x, nd.Of(c.lens, 2)})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "encoder_lstm", "the error names the node")
		})
	}
}

func ExampleModel_lstm() {
	// A forward LSTM of hidden size 2 whose weights are zeros: every gate
	// is sigmoid(0) = 0.5 and the cell input tanh(0) = 0, so the state
	// stays 0; the second sequence is one step long, so its later steps
	// are zeros too.
	node := onnxtest.Node("LSTM", []string{"X", "W", "R", "", "lens"}, []string{"Y", "Y_h"}, onnxtest.Int("hidden_size", 2))
	m, err := onnxtest.Load(onnxtest.Model(14, []*onnxpb.NodeProto{node},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("X", nd.Float32, 2, 2, 1), onnxtest.Value("lens", nd.Int32, 2)},
		[]*onnxpb.ValueInfoProto{onnxtest.ValueNoShape("Y", nd.Float32), onnxtest.ValueNoShape("Y_h", nd.Float32)},
		onnxtest.Init("W", nd.Zeros(nd.Float32, 1, 8, 1)), onnxtest.Init("R", nd.Zeros(nd.Float32, 1, 8, 2))))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Run([]nd.Array{nd.Of([]float32{1, 2, 3, 4}, 2, 2, 1), nd.Of([]int32{2, 1}, 2)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(nd.ShapeString(out[0].Shape), nd.ShapeString(out[1].Shape))
	// Output: [2x1x2x2] [1x2x2]
}
