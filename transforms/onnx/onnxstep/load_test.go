package onnxstep_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// withExternal is y = x + w, its weight w (float32[2]) in the external data
// file at location.
func withExternal(location string) []byte {
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Add", []string{"x", "w"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, 2)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, 2)})
	dt := int32(nd.Float32)
	m.Graph.Initializer = []*onnxpb.TensorProto{{Name: proto.String("w"), DataType: &dt, Dims: []int64{2},
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String(location)}}}}
	return onnxtest.Bytes(m)
}

// Load reads a model at a local path with its external data; a link that
// leads out of the model's directory, a named pipe and a missing file are
// refused, each error naming the model's path.
func TestLoadLocal(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "models")
	require.NoError(t, os.Mkdir(dir, 0o755))
	w := nd.Of([]float32{1, 2}, 2)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.bin"), w.Data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "secret.bin"), w.Data, 0o644))
	require.NoError(t, os.Symlink(filepath.Join(root, "secret.bin"), filepath.Join(dir, "link.bin")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.bin"), 0o644))
	write := func(name, location string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, withExternal(location), 0o644))
		return p
	}

	m, err := onnxstep.Load(t.Context(), write("m.onnx", "w.bin"))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of([]float32{10, 20}, 2)})
	require.NoError(t, err)
	assert.Equal(t, []float32{11, 22}, nd.MustAs[float32](out[0]))

	link := write("link.onnx", "link.bin")
	_, err = onnxstep.Load(t.Context(), link)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "onnx: "+link+`: initializer "w": external data: open link.bin: link.bin leads outside `+dir)

	fifo := write("fifo.onnx", "fifo.bin")
	_, err = onnxstep.Load(t.Context(), fifo)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "named pipe (FIFO)")

	missing := filepath.Join(dir, "none.onnx")
	_, err = onnxstep.Load(t.Context(), missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "onnx: "+missing+": ")
}

// rootFS serves rootfs:// paths from a directory.
type rootFS struct{ dir string }

func (r rootFS) path(name string) string {
	return filepath.Join(r.dir, strings.TrimPrefix(name, "rootfs://"))
}

func (r rootFS) OpenRead(_ context.Context, name string) (io.ReadCloser, error) {
	return os.Open(r.path(name))
}

func (r rootFS) OpenAt(ctx context.Context, name string) (files.File, error) {
	return files.Local{}.OpenAt(ctx, r.path(name))
}

func (r rootFS) List(context.Context, string) ([]string, error) { return nil, nil }

// Load reads a model through a registered filesystem, with its external
// data beside it, at the scheme's root (embedded://m.onnx) and below it
// (gs://bucket/m.onnx).
func TestLoadScheme(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	for _, d := range []string{dir, filepath.Join(dir, "sub")} {
		require.NoError(t, os.WriteFile(filepath.Join(d, "w.bin"), nd.Of([]float32{1, 2}, 2).Data, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "m.onnx"), withExternal("w.bin"), 0o644))
	}
	files.Register("rootfs", rootFS{dir})
	defer files.Register("rootfs", nil)
	for _, name := range []string{"rootfs://m.onnx", "rootfs://sub/m.onnx"} {
		m, err := onnxstep.Load(t.Context(), name)
		require.NoError(t, err, name)
		out, err := m.Run([]nd.Array{nd.Of([]float32{10, 20}, 2)})
		require.NoError(t, err)
		assert.Equal(t, []float32{11, 22}, nd.MustAs[float32](out[0]), name)
	}
	_, err := onnxstep.Load(t.Context(), "rootfs://none.onnx")
	assert.ErrorContains(t, err, "onnx: rootfs://none.onnx: ")
}

// A model file too large for protobuf (3 GB) or of zeros (1 GB) is refused
// from its size and its first bytes, through package files as pipelines
// read models: at once and in little memory (a file of zeros was read
// whole, 2.2 GB resident). The files are sparse: they take no disk.
func TestLoadRefusesLargeAndZeroFilesEarly(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int64{"huge.onnx": 3 << 30, "zeros.onnx": 1 << 30} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
		require.NoError(t, os.Truncate(filepath.Join(dir, name), size))
	}
	var before syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &before))
	start := time.Now()
	for name, want := range map[string]string{
		"huge.onnx":  "huge.onnx: a file of 3221225472 bytes (3.0 GiB), more than a model file may have (2147483648 bytes, protobuf's limit",
		"zeros.onnx": "zeros.onnx: not an ONNX model: the bytes at offset 0 (00 00 00 00 00 00 00 00) are not a field of a model",
	} {
		_, err := onnxstep.Load(context.Background(), filepath.Join(dir, name))
		assert.ErrorContains(t, err, "onnx: "+filepath.Join(dir, want), name)
	}
	assert.Less(t, time.Since(start), 10*time.Second)
	var after syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &after))
	assert.Less(t, after.Maxrss-before.Maxrss, int64(64<<10), "peak resident memory grew (KiB)")
}
