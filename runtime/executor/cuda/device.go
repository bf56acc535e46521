//go:build cuda

// Package cuda is the GPU executor's device layer over gorgonia.org/cu (the CUDA
// driver API) and cuBLAS: one CUDA context on one GPU, the PTX modules that the
// executor's step families registered (package gpu), a device-memory budget, a pool
// of device buffers, data kept resident across calls, and lanes (streams) on which
// calls run. It knows no step: a step's launch (in its family's package) runs on a
// gpu.Call that Device.Launch provides.
//
// A call runs on one of the Device's lanes: a non-blocking stream with its own cuBLAS
// handle bound to it. Its uploads, kernels, products and downloads are enqueued on
// the stream in order; Launch waits for the stream when the launch returns. Lanes run
// concurrently, so consecutive batches (the executor's semaphore lets MaxConcurrent
// through) overlap: one's copies on the copy engines while another's kernels run.
// Host memory that the driver has page-locked (the shared-memory arenas, registered
// with RegisterHost) is copied by DMA, asynchronously; other host memory is staged by
// the driver.
//
// Device memory goes through a budget (Open's budgetBytes): a request above it, or a
// CUDA_ERROR_OUT_OF_MEMORY, first frees the idle pooled buffers, then the least
// recently used resident data nobody is using, and only then fails with an error
// matching ErrOutOfMemory (the device is still usable; the client splits the batch).
// A sticky CUDA error (an illegal address, an ECC error, a lost MPS server) is an
// error matching ErrFatal; the Device then refuses every call with it, and the
// executor exits so that its client restarts it.
//
// Built only with the cuda tag (see doc.go).
package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	_ "github.com/beamgpu/beamgpu/runtime/executor/cuda/cudaenv" // says what to do without the CUDA headers
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"gorgonia.org/cu"
)

// Lanes is the number of streams of a Device: the calls that run on the GPU at
// once; more wait for a free lane.
const Lanes = 3

// minBuf is the smallest pooled buffer; buffers are pooled by size class (powers of
// two up to 1 MiB, then multiples of 1 MiB).
const (
	minBuf     = 256
	bufGranule = 1 << 20
)

// Info describes the Device.
type Info struct {
	Ordinal      int
	Name         string
	ComputeMajor int // compute capability, e.g. 8.0 for an A100
	ComputeMinor int
	SMs          int // streaming multiprocessors
	// DriverVersion is the CUDA version the driver supports, 1000*major + 10*minor
	// (12040 for 12.4).
	DriverVersion int
	TotalBytes    int64 // device memory
	FreeBytes     int64 // free device memory (all processes) when Info was called; -1 if unknown
	BudgetBytes   int64 // what this Device may allocate
	UsedBytes     int64 // what it holds now (buffers, pooled and in use, and resident data)
	ResidentBytes int64 // of which resident data
	Lanes         int
	Modules       []string // the PTX modules loaded
	// MPS reports that the CUDA Multi-Process Service looks active, and MPSHow why:
	// CUDA_MPS_PIPE_DIRECTORY is set, an nvidia-cuda-mps-control or -server process
	// runs, or the default control pipe /tmp/nvidia-mps/control exists.
	MPS    bool
	MPSHow string
}

func (i Info) String() string {
	mps := "no"
	if i.MPS {
		mps = "yes (" + i.MPSHow + ")"
	}
	return fmt.Sprintf("GPU %d: %s, compute capability %d.%d, %d SMs, driver CUDA %d.%d, memory %d MiB (%d MiB free), budget %d MiB (%d MiB used, %d resident), %d lanes, modules %s, MPS %s",
		i.Ordinal, i.Name, i.ComputeMajor, i.ComputeMinor, i.SMs, i.DriverVersion/1000, i.DriverVersion%1000/10,
		i.TotalBytes>>20, i.FreeBytes>>20, i.BudgetBytes>>20, i.UsedBytes>>20, i.ResidentBytes>>20, i.Lanes,
		strings.Join(i.Modules, ", "), mps)
}

// Device is one CUDA context on one GPU with the registered PTX modules loaded.
type Device struct {
	info Info
	dev  cu.Device
	ctx  cu.CUContext

	modules map[*gpu.Module]*module

	lanes    chan *lane // the idle lanes
	allLanes []*lane
	done     chan struct{} // closed by Close
	closed   atomic.Bool
	fatal    atomic.Pointer[FatalError] // the first sticky error

	mem struct {
		sync.Mutex
		budget, used int64
	}
	pool struct {
		sync.Mutex
		free  map[int64][]cu.DevicePtr // idle buffers by size class
		bytes int64                    // their total
	}
	res struct {
		sync.Mutex
		m     map[any]*resident
		clock uint64
		bytes int64
	}
}

type module struct {
	name string
	mod  cu.Module
	mu   sync.Mutex
	fns  map[string]cu.Function
}

// lane is a stream with its cuBLAS handle.
type lane struct {
	stream cu.Stream
	blas   blasHandle
}

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

// Open creates the Device for GPU ordinal: it retains the GPU's primary context
// (shared with any other library of the process; blocking synchronisation, so that a
// waiting call sleeps instead of spinning a core), loads every PTX module registered
// with package gpu (the driver JIT-compiles them for this GPU), and creates the
// lanes. budgetBytes is the device memory this process may use: the executor passes
// a fraction of the total divided among the processes sharing the GPU (MPS clients,
// SDK harness processes); 0 or less means 90% of the memory free now.
func Open(ordinal int, budgetBytes int64) (_ *Device, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	// A driver too old for the image fails here, saying which it found and
	// which it needs, rather than in a kernel later.
	if err := CheckDriver(cu.Version(), ReadDriverVersion()); err != nil {
		return nil, err
	}
	n, err := cu.NumDevices()
	if err != nil {
		return nil, classify("open", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: open: no GPU %d (%d visible)", ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, classify("open", err)
	}
	// Best effort: it fails when the primary context is already active with
	// other flags, and then those stay.
	_ = dev.SetPrimaryCtxFlags(cu.SchedBlockingSync)
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, classify("open: retain the primary context", err)
	}
	d := &Device{dev: dev, ctx: ctx, done: make(chan struct{}), modules: map[*gpu.Module]*module{}}
	d.pool.free = map[int64][]cu.DevicePtr{}
	d.res.m = map[any]*resident{}
	defer func() {
		if err != nil {
			_ = d.release()
		}
	}()
	if err := cu.SetCurrentContext(ctx); err != nil {
		return nil, classify("open: set the context", err)
	}
	if err := d.describe(ordinal); err != nil {
		return nil, err
	}
	free, _, err := cu.MemInfo()
	if err != nil {
		return nil, classify("open: memory info", err)
	}
	if budgetBytes <= 0 {
		budgetBytes = free / 10 * 9
	}
	d.mem.budget = min(budgetBytes, d.info.TotalBytes)
	d.info.BudgetBytes = d.mem.budget

	for _, m := range gpu.Modules() {
		if err := d.load(m); err != nil {
			return nil, err
		}
		d.info.Modules = append(d.info.Modules, m.Name)
	}
	d.lanes = make(chan *lane, Lanes)
	for range Lanes {
		l := &lane{}
		d.allLanes = append(d.allLanes, l)
		if l.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return nil, classify("open: create a stream", err)
		}
		if l.blas, err = newBlas(l.stream); err != nil {
			return nil, classify("open: create a cuBLAS handle", err)
		}
		d.lanes <- l
	}
	d.info.Lanes = Lanes
	d.info.MPS, d.info.MPSHow = detectMPS()
	return d, nil
}

// describe fills the static part of d.info.
func (d *Device) describe(ordinal int) error {
	var err error
	d.info.Ordinal = ordinal
	if d.info.Name, err = d.dev.Name(); err != nil {
		return classify("open: device name", err)
	}
	for _, a := range []struct {
		attr cu.DeviceAttribute
		dst  *int
	}{
		{cu.ComputeCapabilityMajor, &d.info.ComputeMajor},
		{cu.ComputeCapabilityMinor, &d.info.ComputeMinor},
		{cu.MultiprocessorCount, &d.info.SMs},
	} {
		if *a.dst, err = d.dev.Attribute(a.attr); err != nil {
			return classify("open: device attribute", err)
		}
	}
	if d.info.TotalBytes, err = d.dev.TotalMem(); err != nil {
		return classify("open: device memory", err)
	}
	d.info.DriverVersion = cu.Version()
	return nil
}

// load loads one PTX module; its kernels are looked up on first launch.
func (d *Device) load(m *gpu.Module) error {
	// The driver JIT-compiles the PTX for this GPU here; its log says why when it
	// cannot (a driver older than the PTX ISA, a GPU below the PTX's target).
	jitLog := &cu.JITErrorLogBuffer{Buffer: make([]byte, 8192)}
	mod, err := cu.LoadDataEx(string(m.PTX), jitLog)
	if err != nil {
		msg := strings.TrimRight(string(jitLog.Buffer), "\x00 \n")
		return classify(fmt.Sprintf("open: load the PTX of %s (GPU compute capability %d.%d, driver CUDA %d; JIT log: %q)",
			m.Name, d.info.ComputeMajor, d.info.ComputeMinor, d.info.DriverVersion, msg), err)
	}
	d.modules[m] = &module{name: m.Name, mod: mod, fns: map[string]cu.Function{}}
	return nil
}

// function returns kernel k's function.
func (d *Device) function(k gpu.Kernel) (cu.Function, error) {
	m, ok := d.modules[k.Module]
	if !ok {
		name := "<nil>"
		if k.Module != nil {
			name = k.Module.Name
		}
		return cu.Function{}, fmt.Errorf("cuda: kernel %s: module %s is not loaded (not registered when the device opened)", k.Name, name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if fn, ok := m.fns[k.Name]; ok {
		return fn, nil
	}
	fn, err := m.mod.Function(k.Name)
	if err != nil {
		return cu.Function{}, classify("kernel "+k.Name+" of "+m.name, err)
	}
	m.fns[k.Name] = fn
	return fn, nil
}

// detectMPS reports whether the CUDA Multi-Process Service looks active for this
// process, and why.
func detectMPS() (bool, string) {
	if dir := os.Getenv("CUDA_MPS_PIPE_DIRECTORY"); dir != "" {
		return true, "CUDA_MPS_PIPE_DIRECTORY=" + dir
	}
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		b, err := os.ReadFile(c)
		// comm is truncated to 15 characters: nvidia-cuda-mps-control and
		// nvidia-cuda-mps-server both read "nvidia-cuda-mps".
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "nvidia-cuda-mps") {
			return true, "an nvidia-cuda-mps process runs (" + filepath.Base(filepath.Dir(c)) + ")"
		}
	}
	if fi, err := os.Stat("/tmp/nvidia-mps/control"); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		return true, "/tmp/nvidia-mps/control exists"
	}
	return false, ""
}

// Info describes the device, with its free memory now.
func (d *Device) Info() Info {
	info := d.info
	info.FreeBytes = -1
	d.mem.Lock()
	info.UsedBytes = d.mem.used
	d.mem.Unlock()
	d.res.Lock()
	info.ResidentBytes = d.res.bytes
	d.res.Unlock()
	if d.closed.Load() || d.fatal.Load() != nil {
		return info
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cu.SetCurrentContext(d.ctx) == nil {
		if free, _, err := cu.MemInfo(); err == nil {
			info.FreeBytes = free
		}
	}
	return info
}

// Close waits for the calls in flight, frees everything the Device holds and
// releases the primary context. Calls after Close return ErrClosed. After a fatal
// error Close still releases what it can; the process should exit anyway.
func (d *Device) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(d.done)
	for range d.allLanes {
		<-d.lanes
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return classify("close", err)
	}
	return d.release()
}

// release frees what Open created; the context is current.
func (d *Device) release() error {
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range d.allLanes {
		if l.stream != (cu.Stream{}) {
			keep(l.stream.Synchronize())
		}
		keep(l.blas.destroy())
		if l.stream != (cu.Stream{}) {
			keep(l.stream.Destroy())
		}
	}
	keep(d.trimPool())
	d.res.Lock()
	for k, r := range d.res.m {
		if r.ptr != 0 {
			keep(d.free(r.ptr, r.size))
		}
		delete(d.res.m, k)
	}
	d.res.bytes = 0
	d.res.Unlock()
	for _, m := range d.modules {
		keep(m.mod.Unload())
	}
	keep(d.dev.ReleasePrimaryCtx())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda: close: %w", err)
	}
	return nil
}

// usable returns the error that stops every call: ErrClosed or the fatal error.
func (d *Device) usable() error {
	if f := d.fatal.Load(); f != nil {
		return f
	}
	if d.closed.Load() {
		return ErrClosed
	}
	return nil
}

// fail classifies err and, when it is fatal, makes the Device refuse every later call.
func (d *Device) fail(op string, err error) error {
	err = classify(op, err)
	var f *FatalError
	if errors.As(err, &f) {
		d.fatal.CompareAndSwap(nil, f)
	}
	return err
}

// acquire takes an idle lane (waiting at most until ctx ends), locks the goroutine
// to its OS thread and makes the context current on it (driver calls act on the
// thread's current context); the returned function undoes that and gives the lane
// back.
func (d *Device) acquire(ctx context.Context) (*lane, func(), error) {
	if err := d.usable(); err != nil {
		return nil, nil, err
	}
	var l *lane
	select {
	case l = <-d.lanes:
	case <-d.done:
		return nil, nil, ErrClosed
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if d.closed.Load() {
		d.lanes <- l
		return nil, nil, ErrClosed
	}
	runtime.LockOSThread()
	release := func() {
		runtime.UnlockOSThread()
		d.lanes <- l
	}
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		release()
		return nil, nil, d.fail("set the context", err)
	}
	return l, release, nil
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
	if !errors.Is(err, ErrOutOfMemory) {
		return p, err
	}
	if terr := d.trimPool(); terr != nil {
		return 0, d.fail(op+": free", terr)
	}
	for {
		if p, err = d.alloc(op, n); !errors.Is(err, ErrOutOfMemory) {
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

// RegisterHost page-locks host memory (a shared-memory arena the executor mapped)
// with the driver, so that copies between it and the device are DMA, asynchronous,
// at the bus's speed, with no staging copy. The returned function unregisters it;
// call it before unmapping the memory.
func (d *Device) RegisterHost(b []byte) (func(), error) {
	if len(b) == 0 {
		return func() {}, nil
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return nil, d.fail("register host memory", err)
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if err := hostRegister(p, int64(len(b))); err != nil {
		return nil, classify(fmt.Sprintf("page-lock %d bytes of shared memory", len(b)), err)
	}
	return func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if cu.SetCurrentContext(d.ctx) == nil {
			_ = hostUnregister(p)
		}
	}, nil
}

// Launch runs fn with a Call on one of the device's lanes, waits for the Call's work,
// returns its buffers to the pool and its resident data to the cache. output is where
// the Call's Output memory comes from (the response's shared memory). It implements
// the engine of a step's launches (step.Engine): its errors wrap server.ErrOutOfMemory
// (the client splits the batch) or server.ErrFatal (the executor exits).
func (d *Device) Launch(ctx context.Context, op string, output func(n int) ([]byte, error), fn func(c gpu.Call) error) error {
	l, done, err := d.acquire(ctx)
	if err != nil {
		return serverErr(err)
	}
	defer done()
	c := &call{d: d, l: l, op: op, output: output, tm: gpu.TimingsFrom(ctx)}
	err = fn(c)
	if serr := l.stream.Synchronize(); serr != nil {
		err = errors.Join(err, d.fail(op, serr))
	}
	c.addTimings()
	c.finish()
	return serverErr(err)
}

// serverErr maps the device's errors onto the executor's.
func serverErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrFatal):
		return fmt.Errorf("%w: %w", server.ErrFatal, err)
	case errors.Is(err, ErrOutOfMemory):
		return fmt.Errorf("%w: %w", server.ErrOutOfMemory, err)
	}
	return err
}

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
