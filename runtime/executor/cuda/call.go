//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"gorgonia.org/cu"
)

// call is the gpu.Call of one Launch.
type call struct {
	d      *Device
	l      *lane
	op     string
	output func(n int) ([]byte, error)
	bufs   []buf
	res    []*resident

	// When profiling (tm set), each enqueued operation is bracketed by two
	// events; their elapsed times are added to tm by phase once the stream
	// is done.
	tm    *gpu.Timings
	marks []mark
}

type mark struct {
	phase      string
	start, end cu.Event
}

// timed runs enqueue (which enqueues one operation) between two events when
// profiling.
func (c *call) timed(phase string, enqueue func() error) error {
	if c.tm == nil {
		return enqueue()
	}
	start, err1 := cu.MakeEvent(cu.DefaultEvent)
	end, err2 := cu.MakeEvent(cu.DefaultEvent)
	if err := errors.Join(err1, err2); err != nil {
		return enqueue() // profiling is best effort
	}
	if err := start.Record(c.l.stream); err != nil {
		return enqueue()
	}
	err := enqueue()
	if rerr := end.Record(c.l.stream); rerr == nil {
		c.marks = append(c.marks, mark{phase, start, end})
	}
	return err
}

// addTimings adds the marks' elapsed times to tm and destroys their events;
// the stream is idle.
func (c *call) addTimings() {
	for _, m := range c.marks {
		if ms, err := m.start.Elapsed(m.end); err == nil {
			c.tm.Add(m.phase, time.Duration(ms*float64(time.Millisecond)))
		}
		_ = cu.DestroyEvent(&m.start)
		_ = cu.DestroyEvent(&m.end)
	}
	c.marks = nil
}

type buf struct {
	p    cu.DevicePtr
	size int64
}

var _ gpu.Call = (*call)(nil)

// finish returns the call's buffers and resident data; the stream is idle.
func (c *call) finish() {
	for _, b := range c.bufs {
		c.d.putBuf(b.p, b.size)
	}
	c.bufs = nil
	c.d.res.Lock()
	for _, r := range c.res {
		r.refs--
	}
	c.d.res.Unlock()
	c.res = nil
}

func (c *call) Alloc(n int64) (gpu.Ptr, error) {
	if n < 0 {
		return 0, fmt.Errorf("cuda: %s: allocation of %d bytes", c.op, n)
	}
	p, size, err := c.d.getBuf(c.op, max(n, 1))
	if err != nil {
		return 0, err
	}
	c.bufs = append(c.bufs, buf{p, size})
	return gpu.Ptr(p), nil
}

func (c *call) Upload(host []byte) (gpu.Ptr, error) {
	p, err := c.Alloc(int64(len(host)))
	if err != nil {
		return 0, err
	}
	return p, c.Copy(p, host)
}

// Copy enqueues a host-to-device copy on the call's stream. From page-locked memory
// it is a DMA that runs asynchronously; from pageable memory the driver stages the
// bytes and returns once host may be reused.
func (c *call) Copy(dst gpu.Ptr, host []byte) error {
	if len(host) == 0 {
		return nil
	}
	err := c.timed(gpu.PhaseHostToDevice, func() error {
		return cu.MemcpyHtoDAsync(cu.DevicePtr(dst), unsafe.Pointer(unsafe.SliceData(host)), int64(len(host)), c.l.stream)
	})
	if err != nil {
		return c.d.fail(c.op+": upload", err)
	}
	return nil
}

// Download enqueues a device-to-host copy; into page-locked memory (the response's
// shared memory) it completes when the stream does, into pageable memory before it
// returns.
func (c *call) Download(host []byte, src gpu.Ptr) error {
	if len(host) == 0 {
		return nil
	}
	err := c.timed(gpu.PhaseDeviceToHost, func() error {
		return cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(host)), cu.DevicePtr(src), int64(len(host)), c.l.stream)
	})
	if err != nil {
		return c.d.fail(c.op+": download", err)
	}
	return nil
}

// CopyDevice enqueues a device-to-device copy (timed as a kernel: it is the
// device's own memory traffic).
func (c *call) CopyDevice(dst, src gpu.Ptr, n int64) error {
	if n <= 0 {
		return nil
	}
	if err := c.timed(gpu.PhaseKernel, func() error {
		return cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), n, c.l.stream)
	}); err != nil {
		return c.d.fail(c.op+": device copy", err)
	}
	return nil
}

// Launch enqueues kernel k. Every argument is a gpu.Ptr, an int64, an int or a
// float64, matching the kernels' 8-byte parameters (cu's Launch copies 8 bytes per
// parameter).
func (c *call) Launch(k gpu.Kernel, grid, block int, args ...any) error {
	fn, err := c.d.function(k)
	if err != nil {
		return err
	}
	slots := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case gpu.Ptr:
			slots[i] = uint64(v)
		case int64:
			slots[i] = uint64(v)
		case int:
			slots[i] = uint64(int64(v))
		case float64:
			slots[i] = math.Float64bits(v)
		default:
			return fmt.Errorf("cuda: kernel %s: argument %d is a %T", k, i, a)
		}
		params[i] = unsafe.Pointer(&slots[i])
	}
	if grid < 1 || grid > math.MaxInt32 || block < 1 || block > 1024 {
		return fmt.Errorf("cuda: kernel %s: grid %d, block %d", k, grid, block)
	}
	err = c.timed(gpu.PhaseKernel, func() error { return fn.Launch(grid, 1, 1, block, 1, 1, 0, c.l.stream, params) })
	if err != nil {
		return c.d.fail("launch "+k.String(), err)
	}
	runtime.KeepAlive(slots)
	return nil
}

// Gemm enqueues the row-major product on the lane's cuBLAS handle (bound to the
// lane's stream). cuBLAS is column-major: a row-major r x c matrix is, to it, the
// column-major c x r transpose, so C = op(A) op(B) is computed as
// C^T = op(B)^T op(A)^T: cuBLAS's A is our B, its B our A, m and n swap.
func (c *call) Gemm(transA, transB bool, m, n, k int, a gpu.Ptr, lda int, b gpu.Ptr, ldb int, cc gpu.Ptr, ldc int) error {
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v < 1 || v > math.MaxInt32 {
			return fmt.Errorf("cuda: %s: matrix dimension %d out of cuBLAS's range", c.op, v)
		}
	}
	if err := c.timed(gpu.PhaseKernel, func() error { return c.l.blas.sgemm(transB, transA, n, m, k, b, ldb, a, lda, cc, ldc) }); err != nil {
		// A failed product may hide a sticky error: the stream's sync tells.
		if serr := c.l.stream.Synchronize(); serr != nil {
			return c.d.fail(c.op+": Sgemm", serr)
		}
		return classify(c.op+": Sgemm", err)
	}
	return nil
}

// Resident returns the device memory kept under key, filling it on the call's
// stream the first time (and waiting for the fill, so that other lanes see it done).
// Two calls that need a new key at once: the second waits for the first's fill.
func (c *call) Resident(key any, size int64, fill func(gpu.Call, gpu.Ptr) error) (gpu.Ptr, error) {
	d := c.d
	for {
		d.res.Lock()
		r, ok := d.res.m[key]
		if ok {
			select {
			case <-r.ready:
				if r.err == nil {
					r.refs++
					d.res.clock++
					r.last = d.res.clock
					d.res.Unlock()
					c.res = append(c.res, r)
					return gpu.Ptr(r.ptr), nil
				}
				d.res.Unlock()
				return 0, r.err
			default:
			}
			d.res.Unlock()
			<-r.ready // another call is filling it
			continue
		}
		r = &resident{key: key, size: size, refs: 1, ready: make(chan struct{})}
		d.res.m[key] = r
		d.res.Unlock()
		p, err := d.allocRoom(c.op+": resident data", max(size, 1))
		if err == nil {
			r.ptr = p
			if err = fill(c, gpu.Ptr(p)); err == nil {
				if serr := c.l.stream.Synchronize(); serr != nil {
					err = d.fail(c.op+": resident data", serr)
				}
			}
		}
		d.res.Lock()
		if err != nil {
			delete(d.res.m, key)
			if r.ptr != 0 {
				_ = d.free(r.ptr, size)
				r.ptr = 0
			}
			r.err = err
			close(r.ready)
			d.res.Unlock()
			return 0, err
		}
		d.res.clock++
		r.last = d.res.clock
		d.res.bytes += size
		close(r.ready)
		d.res.Unlock()
		c.res = append(c.res, r)
		return gpu.Ptr(p), nil
	}
}

func (c *call) Output(n int) ([]byte, error) {
	if c.output == nil {
		return make([]byte, n), nil
	}
	return c.output(n)
}

func (c *call) Sync() error {
	if err := c.l.stream.Synchronize(); err != nil {
		return c.d.fail(c.op, err)
	}
	return nil
}

func (c *call) Device() gpu.Info {
	return gpu.Info{Name: c.d.info.Name, SMs: c.d.info.SMs, ComputeMajor: c.d.info.ComputeMajor, ComputeMinor: c.d.info.ComputeMinor}
}
