//go:build !linux

package shm

import "os"

// Dir is where Create would make its files.
var Dir = "/dev/shm"

// Create returns ErrUnsupported: arenas are Linux only.
func Create(size int64) (*Arena, error) { return nil, ErrUnsupported }

// Map returns ErrUnsupported: arenas are Linux only.
func Map(fd int, size int64) (*Arena, error) { return nil, ErrUnsupported }

// Grow returns ErrUnsupported.
func (a *Arena) Grow(size int64) error { return ErrUnsupported }

// Stat returns ErrUnsupported.
func (a *Arena) Stat() (os.FileMode, uint64, error) { return 0, 0, ErrUnsupported }

// Close does nothing.
func (a *Arena) Close() error { return nil }
