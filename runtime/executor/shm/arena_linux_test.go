//go:build linux

package shm_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/shm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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

// An arena is anonymous memory: no name in any filesystem, mode 0600.
func TestArenaIsAnonymousAndPrivate(t *testing.T) {
	a, err := shm.Create(1)
	require.NoError(t, err)
	defer a.Close()
	mode, links, err := a.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), mode)
	assert.Equal(t, uint64(0), links, "no name anywhere")
	target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", a.FD()))
	require.NoError(t, err)
	assert.Equal(t, "/memfd:beamgpu-arena (deleted)", target, "in no filesystem: not limited by /dev/shm's size")
}

// Where the kernel has no memfd: a file, unlinked at once, mode 0600.
func TestArenaFileIsPrivateAndUnlinked(t *testing.T) {
	shm.UseMemfd(false)
	defer shm.UseMemfd(true)
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

const smallDirEnv = "BEAMGPU_SHM_TEST_SMALL_DIR"

// Memory the arena cannot have is an error when it is created or grown,
// never a SIGBUS when a page is written: shown with the file fallback in a
// 1 MiB tmpfs (in a mount namespace of its own, as root).
func TestArenaThatDoesNotFitIsAnError(t *testing.T) {
	if dir := os.Getenv(smallDirEnv); dir != "" {
		shm.UseMemfd(false)
		shm.Dir = dir
		_, err := shm.Create(2 << 20)
		require.ErrorIs(t, err, shm.ErrNoMemory)
		a, err := shm.Create(256 << 10)
		require.NoError(t, err)
		defer a.Close()
		require.ErrorIs(t, a.Grow(4<<20), shm.ErrNoMemory)
		assert.Equal(t, int64(256<<10), a.Size(), "a failed Grow keeps the arena as it was")
		a.Bytes()[a.Size()-1] = 1 // still writable
		return
	}
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare(1) for a small tmpfs")
	}
	dir := t.TempDir()
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o size=1m tmpfs "$1" && exec "$0" -test.run '^TestArenaThatDoesNotFitIsAnError$' -test.v`, os.Args[0], dir)
	cmd.Env = append(os.Environ(), smallDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
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

// Arenas are sealed against shrinking, and Map refuses one that is not: a
// client that shrank its memfd under the executor's mapping used to kill
// the executor with SIGBUS when a batch touched the pages past the new end.
func TestArenasAreSealedAgainstShrinking(t *testing.T) {
	a, err := shm.Create(1 << 20)
	require.NoError(t, err)
	defer a.Close()
	assert.ErrorIs(t, syscall.Ftruncate(a.FD(), 4096), syscall.EPERM, "shrinking a sealed arena")
	require.NoError(t, a.Grow(2<<20), "growing stays possible")
	m, err := shm.Map(dup(t, a), 2<<20)
	require.NoError(t, err)
	m.Close()

	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	require.NoError(t, syscall.Ftruncate(fd, 1<<20))
	_, err = shm.Map(fd, 1<<20)
	require.ErrorIs(t, err, shm.ErrNotSealed)
	assert.Contains(t, err.Error(), "F_SEAL_SHRINK")
	syscall.Close(fd)
}
