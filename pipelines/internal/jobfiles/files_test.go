package jobfiles

import (
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// files.OpenAt (Beam's filesystems, through stepbeam) reads a file of a filesystem that only streams (memfs here) at
// any offset: forward reads continue the stream, backward ones reopen it,
// and a read past the end is short with io.EOF.
func TestOpenAtStreamingFilesystem(t *testing.T) {
	data := make([]byte, 3<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.IntN(256))
	}
	memfs.Write("memfs://openat/f", data)
	ctx := context.Background()
	f, err := files.OpenAt(ctx, "memfs://openat/f")
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, int64(len(data)), f.Size())
	for _, c := range []struct{ off, n int }{
		{0, 10}, {10, 100}, {5000, 7}, {2 << 20, 1000}, {100, 50}, {len(data) - 5, 5}, {0, len(data)},
	} {
		buf := make([]byte, c.n)
		n, err := f.ReadAt(buf, int64(c.off))
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c.n, n)
		require.Equal(t, data[c.off:c.off+c.n], buf, "%+v", c)
	}
	buf := make([]byte, 10)
	n, err := f.ReadAt(buf, int64(len(data)-4))
	assert.Equal(t, 4, n)
	assert.ErrorIs(t, err, io.EOF)
	_, err = f.ReadAt(buf, int64(len(data)))
	assert.ErrorIs(t, err, io.EOF)

	_, err = files.OpenAt(ctx, "memfs://openat/missing")
	assert.Error(t, err)
}

// Concatenate streams sources into one file where the store cannot compose.
func TestConcatenateStreams(t *testing.T) {
	memfs.Write("memfs://cat/a", []byte("hello, "))
	memfs.Write("memfs://cat/b", []byte("world"))
	ctx := context.Background()
	require.NoError(t, Concatenate(ctx, "0123456789ab", "memfs://cat/out", []string{"memfs://cat/a", "memfs://cat/b"}))
	var got []byte
	fsys, err := files.OpenAt(ctx, "memfs://cat/out")
	require.NoError(t, err)
	got = make([]byte, fsys.Size())
	_, err = fsys.ReadAt(got, 0)
	require.NoError(t, err)
	assert.Equal(t, "hello, world", string(got))
	assert.ErrorContains(t, Concatenate(ctx, "0123456789ab", "memfs://cat/out", []string{"memfs://cat/missing"}), "memfs://cat/missing")
}
