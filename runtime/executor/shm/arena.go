package shm

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned by Create and Map where shared memory arenas
// are not implemented (every OS but Linux).
var ErrUnsupported = errors.New("shm: unsupported on this OS (the GPU executor runs on Linux only)")

// ErrNoMemory is wrapped by the error of Create or Grow when the system
// cannot give the arena its memory.
var ErrNoMemory = errors.New("shm: not enough memory")

// Arena is a shared-memory mapping: the whole file, mapped read-write and
// shared. It is not safe for concurrent Grow/Close with other use.
type Arena struct {
	fd    int
	data  []byte
	owner bool // created here: may grow (ftruncate) the file
}

// FD is the arena's file descriptor, to pass to the other process. The
// arena keeps owning it.
func (a *Arena) FD() int { return a.fd }

// Size is the arena's size in bytes.
func (a *Arena) Size() int64 { return int64(len(a.data)) }

// Bytes is the whole mapping, zero-copy; valid until Grow or Close.
func (a *Arena) Bytes() []byte { return a.data }

// Slice is the region [off, off+n) of the mapping, zero-copy, with its
// capacity clipped to n; valid until Grow or Close. A region outside the
// arena is an error.
func (a *Arena) Slice(off, n uint64) ([]byte, error) {
	size := uint64(len(a.data))
	if off > size || n > size-off {
		return nil, fmt.Errorf("shm: region %d+%d outside the %d-byte arena", off, n, size)
	}
	return a.data[off : off+n : off+n], nil
}
