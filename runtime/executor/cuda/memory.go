//go:build cuda

package cuda

import (
	"errors"
	"math/bits"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"gorgonia.org/cu"
)

// Device memory: the budget, a pool of buffers by size class, and resident data
// evicted least recently used first when the budget needs room.

// resident is device memory kept across calls under a key.
type resident struct {
	key   any
	ptr   cu.DevicePtr
	size  int64
	refs  int    // calls using it now
	last  uint64 // the clock when last used
	ready chan struct{}
	err   error // set before ready is closed, when filling failed
}

// alloc allocates n bytes of device memory within the budget.
func (d *Device) alloc(op string, n int64) (cu.DevicePtr, error) {
	d.mem.Lock()
	if d.mem.used+n > d.mem.budget {
		err := &OutOfMemoryError{Op: op, Requested: n, InUse: d.mem.used, Budget: d.mem.budget}
		d.mem.Unlock()
		return 0, err
	}
	d.mem.used += n // reserved before the call, so that concurrent calls cannot overshoot
	d.mem.Unlock()
	p, err := cu.MemAlloc(n)
	if err != nil {
		d.mem.Lock()
		d.mem.used -= n
		oom := &OutOfMemoryError{Op: op, Requested: n, InUse: d.mem.used, Budget: d.mem.budget, Err: err}
		d.mem.Unlock()
		if code, ok := cudaCode(err); ok && code == codeOutOfMemory {
			return 0, oom
		}
		return 0, d.fail(op+": allocate", err)
	}
	return p, nil
}

// free frees n bytes at p.
func (d *Device) free(p cu.DevicePtr, n int64) error {
	err := cu.MemFree(p)
	d.mem.Lock()
	d.mem.used -= n
	d.mem.Unlock()
	return err
}

// allocRoom allocates n bytes, making room when the budget or the device refuses:
// first by freeing the idle pooled buffers, then the least recently used resident
// data no call is using.
func (d *Device) allocRoom(op string, n int64) (cu.DevicePtr, error) {
	p, err := d.alloc(op, n)
	if !errors.Is(err, protocol.ErrOutOfMemory) {
		return p, err
	}
	if terr := d.trimPool(); terr != nil {
		return 0, d.fail(op+": free", terr)
	}
	for {
		if p, err = d.alloc(op, n); !errors.Is(err, protocol.ErrOutOfMemory) {
			return p, err
		}
		evicted, eerr := d.evictOne()
		if eerr != nil {
			return 0, d.fail(op+": free", eerr)
		}
		if !evicted {
			return 0, err
		}
	}
}

// sizeClass is the pooled size of a buffer of n bytes.
func sizeClass(n int64) int64 {
	if n <= minBuf {
		return minBuf
	}
	if n < bufGranule {
		return int64(1) << (64 - bits.LeadingZeros64(uint64(n-1)))
	}
	return (n + bufGranule - 1) / bufGranule * bufGranule
}

// getBuf returns a device buffer of at least n bytes from the pool, or a new one.
func (d *Device) getBuf(op string, n int64) (cu.DevicePtr, int64, error) {
	size := sizeClass(n)
	d.pool.Lock()
	if free := d.pool.free[size]; len(free) > 0 {
		p := free[len(free)-1]
		d.pool.free[size] = free[:len(free)-1]
		d.pool.bytes -= size
		d.pool.Unlock()
		return p, size, nil
	}
	d.pool.Unlock()
	p, err := d.allocRoom(op, size)
	return p, size, err
}

// putBuf returns a buffer to the pool (it stays allocated, counted in the budget).
func (d *Device) putBuf(p cu.DevicePtr, size int64) {
	d.pool.Lock()
	d.pool.free[size] = append(d.pool.free[size], p)
	d.pool.bytes += size
	d.pool.Unlock()
}

// trimPool frees the idle pooled buffers; the context is current.
func (d *Device) trimPool() error {
	d.pool.Lock()
	free := d.pool.free
	d.pool.free = map[int64][]cu.DevicePtr{}
	d.pool.bytes = 0
	d.pool.Unlock()
	var errs []error
	for size, ps := range free {
		for _, p := range ps {
			if err := d.free(p, size); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// evictOne frees the least recently used resident data no call is using; false when
// there is none.
func (d *Device) evictOne() (bool, error) {
	d.res.Lock()
	var victim *resident
	for _, r := range d.res.m {
		if r.refs == 0 && r.ptr != 0 && (victim == nil || r.last < victim.last) {
			victim = r
		}
	}
	if victim == nil {
		d.res.Unlock()
		return false, nil
	}
	delete(d.res.m, victim.key)
	d.res.bytes -= victim.size
	d.res.Unlock()
	return true, d.free(victim.ptr, victim.size)
}
