package files_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

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

func (m memFS) OpenAt(ctx context.Context, name string) (files.File, error) {
	s, ok := m[name]
	if !ok {
		return nil, os.ErrNotExist
	}
	return files.StreamAt(func(off int64) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(s[off:])), nil
	}, int64(len(s)), nil), nil
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

// A file that can only be streamed reads at offsets: forward reads go on
// one stream, a read behind reopens it.
func TestStreamAt(t *testing.T) {
	data := strings.Repeat("0123456789", 1000)
	opens := 0
	f := files.StreamAt(func(off int64) (io.ReadCloser, error) {
		opens++
		return io.NopCloser(strings.NewReader(data[off:])), nil
	}, int64(len(data)), nil)
	defer f.Close()
	read := func(off, n int) string {
		b := make([]byte, n)
		got, err := f.ReadAt(b, int64(off))
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		return string(b[:got])
	}
	assert.Equal(t, "234", read(2, 3))
	assert.Equal(t, "567", read(5, 3), "a read just ahead continues the stream")
	assert.Equal(t, 1, opens)
	assert.Equal(t, "012", read(0, 3), "a read behind reopens it")
	assert.Equal(t, 2, opens)
	assert.Equal(t, "89", read(len(data)-2, 5), "the end")
	assert.Equal(t, int64(len(data)), f.Size())

	local := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(local, []byte(data), 0o644))
	lf, err := files.OpenAt(context.Background(), local)
	require.NoError(t, err)
	defer lf.Close()
	b := make([]byte, 4)
	_, err = lf.ReadAt(b, 10)
	require.NoError(t, err)
	assert.Equal(t, "0123", string(b))
	_, err = files.OpenAt(context.Background(), t.TempDir())
	assert.ErrorContains(t, err, "not a regular file")
}

// A named pipe (or any file that is not regular) given as an input is
// refused at once, naming the path and what it is: opening a FIFO for
// reading blocks until a writer comes, forever if none does.
func TestNonRegularInputsAreRefusedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "band_B4.TIF")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	t.Cleanup(func() {
		// Should an open block (the defect), a writer releases it.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	cases := map[string]func() error{
		"OpenAt":       func() error { _, err := files.OpenAt(context.Background(), fifo); return err },
		"OpenRead":     func() error { _, err := files.OpenRead(context.Background(), fifo); return err },
		"ReadAll":      func() error { _, err := files.ReadAll(context.Background(), fifo, 1<<20); return err },
		"OpenAt dir":   func() error { _, err := files.OpenAt(context.Background(), dir); return err },
		"OpenRead dev": func() error { _, err := files.OpenRead(context.Background(), "/dev/zero"); return err },
	}
	for name, open := range cases {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- open() }()
			select {
			case err := <-done:
				require.ErrorIs(t, err, files.ErrNotRegular)
				assert.Regexp(t, `^(`+regexp.QuoteMeta(fifo)+`|`+regexp.QuoteMeta(dir)+`|/dev/zero): not a regular file: a (named pipe \(FIFO\)|directory|device)`, err.Error())
			case <-time.After(10 * time.Second):
				t.Fatal("opening a non-regular input blocked")
			}
		})
	}
}
