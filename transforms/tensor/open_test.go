package tensor

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idxHeader is the header of an N x 28 x 28 uint8 IDX file.
func idxHeader(n uint32) []byte {
	h := []byte{0, 0, IDXUint8, 3}
	for _, d := range []uint32{n, 28, 28} {
		h = binary.BigEndian.AppendUint32(h, d)
	}
	return h
}

// gzipOf compresses the header followed by zeros bytes of zeros.
func gzipOf(t *testing.T, header []byte, zeros int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(header)
	require.NoError(t, err)
	_, err = io.CopyN(zw, zeroReader{}, int64(zeros))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A small gzip file whose stream goes on far past what its header declares
// (10 images, then 64 MiB of zeros): decompression stops at the declared
// size, and the error names the file and the bound.
func TestGzipIDXDecompressesOnlyWhatItsHeaderDeclares(t *testing.T) {
	bomb := gzipOf(t, idxHeader(10), 10*784+64<<20)
	require.Less(t, len(bomb), 128<<10, "a small file")
	var err error
	alloc := allocated(func() { _, err = DecodeIDX(bytes.NewReader(bomb), "bomb-images-idx3-ubyte.gz") })
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrIDXTrailing)
	assert.Contains(t, err.Error(), "bomb-images-idx3-ubyte.gz: trailing data after IDX data: the gzip stream decompresses to more than the 7856 bytes its header declares (16 of header, dimensions 10x28x28: 7840 of data); decompression stopped there")
	assert.Less(t, alloc, uint64(4<<20), "decoding allocated %d bytes", alloc)
}

// A small gzip file whose header declares a large but consistent size (65536
// images of zeros, 49 MiB, from 50 KB): refused as a bomb by its expansion
// ratio, before the data is held.
func TestGzipIDXBombIsRefusedByRatio(t *testing.T) {
	const n = 65536
	bomb := gzipOf(t, idxHeader(n), n*784)
	require.Less(t, len(bomb), 128<<10)
	var err error
	alloc := allocated(func() { _, err = DecodeIDX(bytes.NewReader(bomb), "zeros-images-idx3-ubyte.gz") })
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrIDXTooLarge)
	assert.Contains(t, err.Error(), "zeros-images-idx3-ubyte.gz: IDX data too large: the gzip stream expands more than 100:1")
	assert.Contains(t, err.Error(), "a decompression bomb, not IDX data; refused")
	assert.Less(t, alloc, uint64(16<<20), "decoding allocated %d bytes", alloc)

	// The real test set (about 1.8:1) is far from the bound.
	_, err = ReadIDX(SampleImagesPath())
	assert.NoError(t, err)
}

// memFS serves mem://NAME from dir, recording what is opened.
type memFS struct {
	dir    string
	opened *[]string
}

func (m memFS) OpenRead(_ context.Context, name string) (io.ReadCloser, error) {
	*m.opened = append(*m.opened, name)
	local, ok := strings.CutPrefix(name, "mem://")
	if !ok {
		return nil, errors.New("only mem:// here")
	}
	return os.Open(filepath.Join(m.dir, local))
}

func (m memFS) OpenAt(context.Context, string) (files.File, error) {
	return nil, errors.New("no reading at offsets")
}

func (m memFS) List(context.Context, string) ([]string, error) { return nil, errors.New("no listing") }

// Every reader of the package opens its files through package files, so a
// program's filesystems (Beam's in a pipeline) serve them.
func TestEveryReaderOpensThroughFiles(t *testing.T) {
	dir := t.TempDir()
	var opened []string
	files.Register("mem", memFS{dir: dir, opened: &opened})
	defer files.Register("mem", nil)
	for _, f := range []string{SampleImagesPath(), SampleLabelsPath()} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644))
	}
	m := sampleMLP()
	require.NoError(t, SaveMLP(filepath.Join(dir, "m.bgmlp"), m))

	src := Source{Images: "mem://t10k-images-idx3-ubyte.gz", Labels: "mem://t10k-labels-idx1-ubyte.gz", BatchRows: 5000}
	out, err := DecodeSource(src)
	require.NoError(t, err)
	assert.Equal(t, 10000, out.Rows)
	assert.Equal(t, "t10k-images-idx3-ubyte.gz", out.Batches[0].Source)
	stub, err := DecodeSourceHeaders(src)
	require.NoError(t, err)
	assert.Equal(t, 10000, stub.Rows)
	got, err := LoadMLP("mem://m.bgmlp")
	require.NoError(t, err)
	assert.Equal(t, m.Dims(), got.Dims())
	assert.Equal(t, []string{src.Images, src.Labels, src.Images, "mem://m.bgmlp"}, opened)

}

func TestURLsWithoutAFilesystemAreRefused(t *testing.T) {
	_, err := ReadIDX("gs://bucket/t10k-images-idx3-ubyte.gz")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gs://bucket/t10k-images-idx3-ubyte.gz: no filesystem for gs:// paths in this program")
	_, err = LoadMLP(filepath.Join(t.TempDir(), "missing.bgmlp"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
