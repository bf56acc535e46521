//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	_ "github.com/beamgpu/beamgpu/runtime/executor/cuda/cudaenv" // says what to do without the CUDA headers
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
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
// the engine of a step's launches (step.Engine): its errors wrap protocol.ErrOutOfMemory
// (the client splits the batch) or protocol.ErrFatal (the executor exits).
func (d *Device) Launch(ctx context.Context, op string, output func(n int) ([]byte, error), fn func(c gpu.Call) error) error {
	l, done, err := d.acquire(ctx)
	if err != nil {
		return err // its errors match protocol.ErrOutOfMemory and ErrFatal as they are
	}
	defer done()
	c := &call{d: d, l: l, op: op, output: output, tm: gpu.TimingsFrom(ctx)}
	err = fn(c)
	if serr := l.stream.Synchronize(); serr != nil {
		err = errors.Join(err, d.fail(op, serr))
	}
	c.addTimings()
	c.finish()
	return err // its errors match protocol.ErrOutOfMemory and ErrFatal as they are
}

// Visible returns how many GPUs the process can see (those
// CUDA_VISIBLE_DEVICES lists, in its order, or all), after checking that
// the list names no GPU that does not exist: the driver stops the list at
// the first such entry, hiding the ones after it, so a list longer than
// what the driver sees is an error naming it.
func Visible() (int, error) {
	if err := CheckDriver(cu.Version(), ReadDriverVersion()); err != nil {
		return 0, err
	}
	n, err := cu.NumDevices()
	if err != nil {
		return 0, classify("count the devices", err)
	}
	v, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	if err := CheckVisible(v, set, n); err != nil {
		return 0, err
	}
	return n, nil
}
