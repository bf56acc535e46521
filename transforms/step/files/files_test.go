package files_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type memFS map[string]string

func (m memFS) OpenRead(_ context.Context, name string) (io.ReadCloser, error) {
	s, ok := m[name]
	if !ok {
		return nil, os.ErrNotExist
	}
	return io.NopCloser(strings.NewReader(s)), nil
}

func (m memFS) List(_ context.Context, glob string) ([]string, error) {
	var out []string
	for k := range m {
		if ok, _ := filepath.Match(glob, k); ok {
			out = append(out, k)
		}
	}
	return out, nil
}

func TestSchemesAndDefault(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(path, []byte("local"), 0o644))
	b, err := files.ReadAll(ctx, path, 100)
	require.NoError(t, err)
	assert.Equal(t, "local", string(b))
	_, err = files.ReadAll(ctx, path, 3)
	assert.EqualError(t, err, path+": larger than 3 bytes")
	got, err := files.List(ctx, filepath.Join(dir, "*.txt"))
	require.NoError(t, err)
	assert.Equal(t, []string{path}, got)

	_, err = files.OpenRead(ctx, "gs://b/x")
	assert.EqualError(t, err, "gs://b/x: no filesystem for gs:// paths in this program (package stepbeam registers Beam's)")

	files.Register("mem", memFS{"mem://x": "in memory"})
	defer files.Register("mem", nil)
	b, err = files.ReadAll(ctx, "mem://x", 100)
	require.NoError(t, err)
	assert.Equal(t, "in memory", string(b))

	files.Register("", memFS{"gs://b/x": "default"})
	defer files.Register("", nil)
	b, err = files.ReadAll(ctx, "gs://b/x", 100)
	require.NoError(t, err)
	assert.Equal(t, "default", string(b), "the default serves every other scheme")
}
