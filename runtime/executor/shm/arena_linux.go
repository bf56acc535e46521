//go:build linux

package shm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir is where Create makes its files where the kernel has no memfd_create
// (Linux before 3.17): tmpfs, so the pages are memory.
var Dir = "/dev/shm"

// useMemfd is false only in tests of the file fallback.
var useMemfd = true

// pageRound rounds size up to whole pages (the mapping's granularity).
func pageRound(size int64) int64 {
	p := int64(os.Getpagesize())
	return (size + p - 1) / p * p
}

// Create makes a new arena of at least size bytes (rounded up to pages):
// anonymous memory (memfd_create), which no filesystem limits (Docker's
// default /dev/shm is 64 MiB); where the kernel has no memfd, a file created
// at mode 0600 with O_EXCL in Dir (os.TempDir() if Dir is not a directory),
// unlinked at once. Its pages are reserved before it is mapped, so memory
// that cannot be had is an error wrapping ErrNoMemory here, never a SIGBUS
// when a batch is written into it.
func Create(size int64) (*Arena, error) {
	if size <= 0 {
		size = 1
	}
	size = pageRound(size)
	if useMemfd {
		fd, err := unix.MemfdCreate("beamgpu-arena", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err == nil {
			a, err := newArena(fd, size)
			if err != nil {
				return nil, err
			}
			// Sealed against shrinking: the other process maps it, and a
			// file shrunk under a mapping is a SIGBUS in whoever touches
			// the pages past its new end. Growing stays possible.
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK); err != nil {
				a.Close()
				return nil, fmt.Errorf("shm: sealing the arena against shrinking: %w", err)
			}
			return a, nil
		}
		if !errors.Is(err, syscall.ENOSYS) {
			return nil, fmt.Errorf("shm: memfd_create: %w", err)
		}
	}
	dir := Dir
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		dir = os.TempDir()
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	path := filepath.Join(dir, fmt.Sprintf("beamgpu-arena-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:])))
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm: create %s: %w", path, err)
	}
	// Nobody else opens it: the descriptor is all either process needs.
	_ = syscall.Unlink(path)
	return newArena(fd, size) // 0600, whatever the umask did
}

func newArena(fd int, size int64) (*Arena, error) {
	if err := syscall.Fchmod(fd, 0o600); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("shm: chmod: %w", err)
	}
	a := &Arena{fd: fd, owner: true}
	if err := a.resize(size); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return a, nil
}

// Map maps an arena of size bytes from a descriptor received from the other
// process; the arena takes ownership of fd (Close closes it). The file must
// be at least size bytes, or touching the mapping past its end would crash
// the process (SIGBUS).
func Map(fd int, size int64) (*Arena, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat: %w", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("shm: descriptor is not a regular file (mode %o)", st.Mode)
	}
	if size <= 0 || st.Size < size {
		return nil, fmt.Errorf("shm: %d bytes announced, file has %d", size, st.Size)
	}
	if err := checkSealed(fd); err != nil {
		return nil, err
	}
	data, err := syscall.Mmap(fd, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap %d bytes: %w", size, err)
	}
	return &Arena{fd: fd, data: data}, nil
}

// ErrNotSealed: an arena received that its sender could shrink.
var ErrNotSealed = errors.New("shm: the arena is not sealed against shrinking (F_SEAL_SHRINK): refused, since its sender could shrink it under this process's mapping (SIGBUS)")

// memfdSealing reports whether this kernel makes sealable memfds (Linux
// 3.17 on); without them, Create's arenas are files, which cannot be
// sealed, and Map accepts an unsealed arena.
var memfdSealing = sync.OnceValue(func() bool {
	fd, err := unix.MemfdCreate("beamgpu-probe", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return false
	}
	syscall.Close(fd)
	return true
})

// checkSealed checks that fd is sealed against shrinking (F_SEAL_SHRINK),
// where the kernel has sealable memfds.
func checkSealed(fd int) error {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		if errors.Is(err, syscall.EINVAL) && (!useMemfd || !memfdSealing()) {
			return nil // a file arena of a kernel without memfds
		}
		return fmt.Errorf("%w (F_GET_SEALS: %v)", ErrNotSealed, err)
	}
	if seals&unix.F_SEAL_SHRINK == 0 {
		return ErrNotSealed
	}
	return nil
}

// Grow makes the arena at least size bytes (rounded up to pages), keeping
// its contents. Views taken before are invalid after. Only the creator of an
// arena may grow it; the other process maps it again (Map) at the new size.
func (a *Arena) Grow(size int64) error {
	if !a.owner {
		return fmt.Errorf("shm: only its creator can grow it")
	}
	if size <= int64(len(a.data)) {
		return nil
	}
	return a.resize(pageRound(size))
}

func (a *Arena) resize(size int64) error {
	if err := syscall.Ftruncate(a.fd, size); err != nil {
		return fmt.Errorf("shm: grow to %d bytes: %w", size, err)
	}
	// Reserve the pages now: touching a page the system cannot give would be
	// a SIGBUS in whoever writes it.
	old := int64(len(a.data))
	if err := unix.Fallocate(a.fd, 0, old, size-old); err != nil {
		_ = syscall.Ftruncate(a.fd, old)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.ENOMEM) {
			return fmt.Errorf("%w: %d bytes: %v", ErrNoMemory, size, err)
		}
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			return fmt.Errorf("shm: reserve %d bytes: %w", size, err)
		}
	}
	data, err := syscall.Mmap(a.fd, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("shm: mmap %d bytes: %w", size, err)
	}
	if a.data != nil {
		_ = syscall.Munmap(a.data)
	}
	a.data = data
	return nil
}

// Stat returns the mode and link count of the arena's file (for checks: the
// mode is 0600 and the link count 0, since it is unlinked).
func (a *Arena) Stat() (mode os.FileMode, links uint64, err error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(a.fd, &st); err != nil {
		return 0, 0, err
	}
	return os.FileMode(st.Mode & 0o777), uint64(st.Nlink), nil
}

// Close unmaps the arena and closes its descriptor.
func (a *Arena) Close() error {
	var err error
	if a.data != nil {
		err = syscall.Munmap(a.data)
		a.data = nil
	}
	if a.fd >= 0 {
		if cerr := syscall.Close(a.fd); err == nil {
			err = cerr
		}
		a.fd = -1
	}
	return err
}
