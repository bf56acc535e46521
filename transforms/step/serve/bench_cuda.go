//go:build cuda && !beamgpu_oplist

package serve

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/executor/cuda"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// deviceCeilings measures GPU 0: host-device bandwidth from page-locked
// memory (registered as the executor registers its arenas) and from
// pageable memory, the device's own copy, and cuBLAS's float32 product rate
// at 8192x784x256 (the dense benchmark's shape). Each is the wall time of a
// device call (the copy or product and the wait for it), median of reps.
func deviceCeilings(c *ceilings, reps int) error {
	d, err := cuda.Open(0, 0)
	if err != nil {
		return fmt.Errorf("open the GPU for its ceilings: %w", err)
	}
	defer d.Close()
	const n = 256 << 20
	mem := make([]byte, n+4096)
	off := int((4096 - uintptr(unsafe.Pointer(&mem[0]))%4096) % 4096)
	pinned := mem[off : off+n]
	release, err := d.RegisterHost(pinned)
	if err != nil {
		return err
	}
	defer release()
	pageable := make([]byte, n)
	for i := range pageable {
		pageable[i], pinned[i] = byte(i), byte(i)
	}
	ctx := context.Background()
	time1 := func(fn func(gpu.Call) error) (time.Duration, error) {
		return median(reps, func() error { return d.Launch(ctx, "bench ceilings", nil, fn) })
	}
	var buf, buf2 gpu.Ptr
	if err := d.Launch(ctx, "bench ceilings", nil, func(call gpu.Call) error {
		var err error
		buf, err = call.Resident("bench a", n, func(gpu.Call, gpu.Ptr) error { return nil })
		if err == nil {
			buf2, err = call.Resident("bench b", n, func(gpu.Call, gpu.Ptr) error { return nil })
		}
		return err
	}); err != nil {
		return err
	}
	rate := func(fn func(gpu.Call) error) (float64, error) {
		t, err := time1(fn)
		return n / t.Seconds(), err
	}
	if c.h2dPinned, err = rate(func(call gpu.Call) error { return call.Copy(buf, pinned) }); err != nil {
		return err
	}
	if c.d2hPinned, err = rate(func(call gpu.Call) error { return call.Download(pinned, buf) }); err != nil {
		return err
	}
	if c.h2dPageable, err = rate(func(call gpu.Call) error { return call.Copy(buf, pageable) }); err != nil {
		return err
	}
	if c.d2hPageable, err = rate(func(call gpu.Call) error { return call.Download(pageable, buf) }); err != nil {
		return err
	}
	if c.deviceCopy, err = rate(func(call gpu.Call) error { return call.CopyDevice(buf2, buf, n) }); err != nil {
		return err
	}
	c.deviceCopy *= 2 // read and write
	const m, nn, k = 8192, 256, 784
	t, err := time1(func(call gpu.Call) error {
		return call.Gemm(false, false, m, nn, k, buf, k, buf2, nn, buf2.Offset(4*k*nn), nn)
	})
	if err != nil {
		return err
	}
	c.gemm = 2 * m * nn * k / t.Seconds()
	c.device = true
	return nil
}
