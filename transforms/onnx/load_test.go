package onnx_test

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// externalModel is y = x + w, its weight w (float32[4]) in the external
// data file at location, at offset 8.
func externalModel(location string) []byte { return externalModelAt(location, "8", "16") }

// externalModelAt is externalModel with the offset and length given.
func externalModelAt(location, offset, length string) []byte {
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Add", []string{"x", "w"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, 4)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, 4)})
	dt := int32(nd.Float32)
	m.Graph.Initializer = []*onnxpb.TensorProto{{Name: proto.String("w"), DataType: &dt, Dims: []int64{4},
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{
			{Key: proto.String("location"), Value: proto.String(location)},
			{Key: proto.String("offset"), Value: proto.String(offset)},
			{Key: proto.String("length"), Value: proto.String(length)},
		}}}
	return onnxtest.Bytes(m)
}

// weights is an external data file: 8 bytes of padding, then w = 1, 2, 3, 4.
func weights() []byte {
	w := nd.Of([]float32{1, 2, 3, 4}, 4)
	return append(make([]byte, 8), w.Data...)
}

// Load reads a model and its external data through an fs.FS; Read and
// Parse take the model's bytes and refuse external data.
func TestLoadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"models/m.onnx":        {Data: externalModel("data/w.bin")},
		"models/data/w.bin":    {Data: weights()},
		"models/escape.onnx":   {Data: externalModel("../w.bin")},
		"models/abs.onnx":      {Data: externalModel("/w.bin")},
		"models/url.onnx":      {Data: externalModel("gs://b/w.bin")},
		"models/missing.onnx":  {Data: externalModel("none.bin")},
		"models/short.onnx":    {Data: externalModel("short.bin")},
		"models/short.bin":     {Data: make([]byte, 20)},
		"models/negative.onnx": {Data: externalModelAt("data/w.bin", "-8", "16")},
		"models/badoff.onnx":   {Data: externalModelAt("data/w.bin", "8x", "16")},
		"models/neglen.onnx":   {Data: externalModelAt("data/w.bin", "8", "-16")},
		"w.bin":                {Data: weights()},
	}
	m, err := onnx.Load(fsys, "models/m.onnx")
	require.NoError(t, err)
	assert.Equal(t, "m.onnx", m.Name)
	out, err := m.Run([]nd.Array{nd.Of([]float32{10, 20, 30, 40}, 4)})
	require.NoError(t, err)
	assert.Equal(t, []float32{11, 22, 33, 44}, nd.MustAs[float32](out[0]))

	for name, want := range map[string]string{
		"models/escape.onnx":  `onnx: models/escape.onnx: initializer "w": external data location "../w.bin" is outside the model's directory`,
		"models/abs.onnx":     `external data location "/w.bin" is outside the model's directory`,
		"models/url.onnx":     `external data location "gs://b/w.bin" is outside the model's directory`,
		"models/missing.onnx": `initializer "w": external data: open models/none.bin: file does not exist`,
		"models/short.onnx":   "external data short.bin: 16 bytes at offset 8 of a 20-byte file",
		"models/none.onnx":    "onnx: models/none.onnx: open models/none.onnx: file does not exist",
		// The tensor, the file and the offset, not "external data offset: <nil>".
		"models/negative.onnx": `onnx: models/negative.onnx: initializer "w": external data data/w.bin: offset -8 is negative`,
		"models/badoff.onnx":   `initializer "w": external data data/w.bin: offset "8x" is not a number of bytes`,
		"models/neglen.onnx":   `initializer "w": external data data/w.bin: length -16 is negative`,
	} {
		_, err := onnx.Load(fsys, name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), want, name)
	}

	_, err = onnx.Read(bytes.NewReader(externalModel("data/w.bin")), "m.onnx")
	assert.ErrorContains(t, err, `onnx: m.onnx: initializer "w" is in an external data file, which a model given as bytes cannot have`)
	_, err = onnx.Read(strings.NewReader("not a model"), "junk.onnx")
	assert.ErrorContains(t, err, "onnx: junk.onnx: not an ONNX model")
}
