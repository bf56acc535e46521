//go:build linux

package shm_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/shm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dup hands a copy of the arena's descriptor to Map, as the socket does.
func dup(t *testing.T, a *shm.Arena) int {
	fd, err := syscall.Dup(a.FD())
	require.NoError(t, err)
	return fd
}

func TestArenaSharedBetweenMappings(t *testing.T) {
	a, err := shm.Create(100)
	require.NoError(t, err)
	defer a.Close()
	assert.Equal(t, int64(os.Getpagesize()), a.Size(), "rounded up to a page")

	b, err := shm.Map(dup(t, a), a.Size())
	require.NoError(t, err)
	defer b.Close()

	in, err := a.Slice(10, 5)
	require.NoError(t, err)
	copy(in, "hello")
	got, err := b.Slice(10, 5)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got), "a write in one mapping is seen in the other, zero-copy")
	assert.Equal(t, 5, cap(got), "views are clipped to their region")

	_, err = b.Slice(uint64(b.Size())-1, 2)
	assert.Error(t, err)
	_, err = b.Slice(1<<63, 1<<63)
	assert.Error(t, err)
	assert.Error(t, b.Grow(1<<20), "only the creator grows an arena")
}

func TestArenaGrowKeepsContents(t *testing.T) {
	a, err := shm.Create(4096)
	require.NoError(t, err)
	defer a.Close()
	copy(a.Bytes(), "kept")
	require.NoError(t, a.Grow(3<<20))
	assert.Equal(t, int64(3<<20), a.Size())
	assert.Equal(t, "kept", string(a.Bytes()[:4]))
	a.Bytes()[a.Size()-1] = 7

	// The other process maps it again at the new size.
	b, err := shm.Map(dup(t, a), a.Size())
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, byte(7), b.Bytes()[b.Size()-1])
}

func TestArenaFileIsPrivateAndUnlinked(t *testing.T) {
	dir := t.TempDir()
	old := shm.Dir
	shm.Dir = dir
	defer func() { shm.Dir = old }()
	a, err := shm.Create(1)
	require.NoError(t, err)
	defer a.Close()
	mode, links, err := a.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), mode)
	assert.Equal(t, uint64(0), links, "unlinked at once: nothing left behind if a process dies")
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	assert.Empty(t, left)
}

func TestMapRefusesAShortFile(t *testing.T) {
	a, err := shm.Create(4096)
	require.NoError(t, err)
	defer a.Close()
	fd := dup(t, a)
	_, err = shm.Map(fd, 1<<20)
	assert.ErrorContains(t, err, "1048576 bytes announced, file has 4096")
	syscall.Close(fd)
	_, err = shm.Map(-1, 10)
	assert.Error(t, err)
}
