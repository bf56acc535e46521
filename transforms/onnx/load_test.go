package onnx_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

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

// zeros is an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A model file's size is checked before it is read, and its first bytes
// before the rest: a 3 GB file (over protobuf's 2 GiB), a 1 GB file of
// zeros and a file of garbage are refused at once, in little memory (the
// file of zeros was read whole: 2.2 GB resident, 11 s here). The files are
// sparse: they take no disk.
func TestLoadRefusesLargeAndGarbageFilesEarly(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name string, size int64, head []byte) {
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		_, err = f.Write(head)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size))
		require.NoError(t, f.Close())
	}
	model := onnxtest.Bytes(onnxtest.Model(17, nodes{onnxtest.Node("Relu", []string{"x"}, []string{"y"})},
		values{onnxtest.Value("x", nd.Float32, 4)}, values{onnxtest.Value("y", nd.Float32, 4)}))
	garbage := make([]byte, 1<<20)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(garbage)
	sparse("huge.onnx", 3<<30, nil)
	sparse("zeros.onnx", 1<<30, nil)
	sparse("trailing.onnx", 1<<30, model) // a model, then 1 GB of zeros
	sparse("garbage.onnx", int64(len(garbage)), garbage)
	sparse("empty.onnx", 0, nil)
	sparse("nograph.onnx", 1<<20, []byte{0x08, 0x08}) // ir_version 8, then zeros
	irs := bytes.Repeat([]byte{0x08, 0x08}, 1<<19)    // ir_version 8, 2^19 times over: valid protobuf
	sparse("versions.onnx", int64(len(irs)), irs)

	runtime.GC()
	before := rss(t)
	start := time.Now()
	for name, want := range map[string]string{
		"huge.onnx":     "onnx: huge.onnx: a file of 3221225472 bytes (3.0 GiB), more than a model file may have (2147483648 bytes, protobuf's limit; larger weights go in external data files)",
		"zeros.onnx":    "onnx: zeros.onnx: not an ONNX model: the bytes at offset 0 (00 00 00 00 00 00 00 00) are not a field of a model",
		"trailing.onnx": "onnx: trailing.onnx: not an ONNX model: the bytes at offset " + strconv.Itoa(len(model)) + " (00 00",
		"garbage.onnx":  "onnx: garbage.onnx: not an ONNX model: the bytes at offset ",
		"empty.onnx":    "onnx: empty.onnx: not an ONNX model: the file is empty",
		"nograph.onnx":  "onnx: nograph.onnx: not an ONNX model: the bytes at offset 2 (00 00",
		"versions.onnx": "onnx: versions.onnx: not an ONNX model: no graph in its first 1024 fields",
	} {
		_, err := onnx.Load(os.DirFS(dir), name)
		assert.ErrorContains(t, err, want, name)
	}
	// A stream: only its first 64 KiB are read.
	_, err := onnx.Read(io.LimitReader(zeros{}, 1<<30), "stream.onnx")
	assert.ErrorContains(t, err, "onnx: stream.onnx: not an ONNX model: the bytes at offset 0 (00 00 00 00 00 00 00 00) are not a field of a model")
	_, err = onnx.Read(io.MultiReader(bytes.NewReader(model), io.LimitReader(zeros{}, 1<<30)), "stream.onnx")
	assert.Error(t, err)

	assert.Less(t, time.Since(start), 20*time.Second)
	assert.Less(t, rss(t)-before, int64(64<<20), "resident memory grew")

	// A model file that is whole loads, from a file and from a stream.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m.onnx"), model, 0o644))
	_, err = onnx.Load(os.DirFS(dir), "m.onnx")
	require.NoError(t, err)
	_, err = onnx.Read(bytes.NewReader(model), "m.onnx")
	require.NoError(t, err)
}
