//go:build cuda

// Package cuda is the GPU executor's device layer over gorgonia.org/cu (the CUDA
// driver API) and gorgonia.org/cu/blas (cuBLAS): one CUDA context on one GPU, the
// steps' kernels loaded from the PTX that transforms/raster and transforms/tensor
// embed, a cuBLAS handle, a device-memory budget and a few streams, behind a plain
// Go API on host slices (TOA, TOANDVI, NDVI, Composite, Standardize, Dense,
// Softmax, Argmax, KNN) for the executor's ops to call.
//
// Every method is safe for concurrent use. A call runs on one of the Device's lanes
// (a non-blocking stream with its own device and page-locked staging buffers): it
// packs its inputs into the lane's pinned buffer, uploads them with one async copy,
// launches its kernels (and cuBLAS) in stream order, downloads its outputs with one
// async copy and waits for the stream. With two lanes, two concurrent calls (two
// batches that the executor's semaphore lets through) overlap: one batch's copies
// run on the copy engines while the other's kernels run, and one's host-side packing
// while the other's GPU work runs: double buffering across consecutive batches.
//
// Device memory goes through a budget (Open's budgetBytes): a request above it, or a
// CUDA_ERROR_OUT_OF_MEMORY, is an error matching ErrOutOfMemory, after which the
// device is still usable and the caller can split the batch and retry. A sticky
// CUDA error (an illegal address, an ECC error, a lost MPS server) is an error
// matching ErrFatal; the Device then refuses every call with it, and the executor
// should exit so that its client restarts it.
//
// The methods validate shapes but not values: the caller (the op) checks what the
// CPU function checks (finite inputs for Softmax and KNN, ...) so that both report
// the same errors.
//
// Built only with the cuda tag (see doc.go); nothing here has been run on a GPU in
// this repository's CI, which only compiles and vets it.
package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"gonum.org/v1/gonum/blas"
	"gorgonia.org/cu"
	cublas "gorgonia.org/cu/blas"
)

// Lanes is the number of streams (with their buffers) of a Device: the number of
// calls that run on the GPU at once; more wait for a free lane.
const Lanes = 2

// Sizes of the buffers.
const (
	align          = 256       // offset alignment of the arrays packed into one buffer
	bufGranule     = 1 << 20   // device buffers grow in steps of 1 MiB
	maxPinnedBytes = 256 << 20 // larger staging uses pageable memory (synchronous copies)
)

// knnDotsBytes bounds the dot-product block of a KNN call: the queries go in chunks
// whose products with the reference set fit it (a variable for the tests).
var knnDotsBytes int64 = 256 << 20

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
	UsedBytes     int64 // what it holds now (buffers and reference sets)
	Lanes         int
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
	return fmt.Sprintf("GPU %d: %s, compute capability %d.%d, %d SMs, driver CUDA %d.%d, memory %d MiB (%d MiB free), budget %d MiB (%d MiB used), %d lanes, MPS %s",
		i.Ordinal, i.Name, i.ComputeMajor, i.ComputeMinor, i.SMs, i.DriverVersion/1000, i.DriverVersion%1000/10,
		i.TotalBytes>>20, i.FreeBytes>>20, i.BudgetBytes>>20, i.UsedBytes>>20, i.Lanes, mps)
}

// kernel is a loaded kernel.
type kernel struct {
	name string
	fn   cu.Function
}

// Device is one CUDA context on one GPU with the steps' kernels loaded.
type Device struct {
	info Info
	dev  cu.Device
	ctx  cu.CUContext

	modules []cu.Module
	k       struct {
		toa, toaNDVI, ndvi, composite                               kernel
		stdUnit, stdZScore, biasReLU, softmax, argmax, sqNorms, knn kernel
	}

	// blasMu guards blas (cu/blas keeps the first error in the handle, so a failed
	// handle is replaced) and makes each lane's [wait, Sgemm, record] on the default
	// stream one sequence (see gemm).
	blasMu sync.Mutex
	blas   *cublas.Standard

	lanes    chan *lane // the idle lanes
	allLanes []*lane
	done     chan struct{} // closed by Close
	closed   atomic.Bool
	fatal    atomic.Pointer[FatalError] // the first sticky error

	mem struct {
		sync.Mutex
		budget, used int64
	}
	refsMu sync.Mutex
	refs   map[*RefHandle]struct{}
}

// lane is a stream with the buffers of one call in flight.
type lane struct {
	stream        cu.Stream
	evIn, evOut   cu.Event // order the lane's stream and cuBLAS's default stream
	in, out, tmp  devBuf   // device: packed inputs, packed outputs, scratch
	pinIn, pinOut hostBuf  // host staging of in and out
}

// devBuf is a device buffer, reused by the calls of a lane and grown on demand.
type devBuf struct {
	ptr  cu.DevicePtr
	size int64
}

// hostBuf is a staging buffer: page-locked (pinned) memory from cuMemAllocHost, so
// that async copies really are asynchronous, or, above maxPinnedBytes or when the
// system refuses to pin more, ordinary Go memory (then the driver copies through its
// own pinned staging and the "async" copy may block the caller; the buffer stays
// referenced by the lane, so it outlives the copy either way).
type hostBuf struct {
	pinned unsafe.Pointer
	mem    []byte
	size   int64
}

func (h *hostBuf) bytes() []byte {
	if h.pinned != nil {
		return unsafe.Slice((*byte)(h.pinned), h.size)
	}
	return h.mem
}

func (h *hostBuf) ptr() unsafe.Pointer {
	if h.pinned != nil {
		return h.pinned
	}
	return unsafe.Pointer(&h.mem[0])
}

// ensure makes the buffer hold at least n > 0 bytes (contents not kept).
func (h *hostBuf) ensure(n int64) error {
	if h.size >= n {
		return nil
	}
	if err := h.release(); err != nil {
		return err
	}
	size := roundUp(n, bufGranule)
	if size <= maxPinnedBytes {
		if p, err := allocHost(size); err == nil {
			h.pinned, h.size = p, size
			return nil
		}
		// Pinned memory is a limited system resource: fall back to pageable.
	}
	h.mem, h.size = make([]byte, n), n
	return nil
}

func (h *hostBuf) release() error {
	var err error
	if h.pinned != nil {
		err = freeHost(h.pinned)
	}
	h.pinned, h.mem, h.size = nil, nil, 0
	return err
}

// Open creates the Device for GPU ordinal: it retains the GPU's primary context
// (shared with any other library of the process; blocking synchronisation, so that a
// waiting call sleeps instead of spinning a core), loads raster.PTX and tensor.PTX
// (the driver JIT-compiles them for this GPU), creates the cuBLAS handle and the
// lanes. budgetBytes is the device memory this process may use: the executor passes
// a fraction of the total divided among the processes sharing the GPU (MPS clients,
// SDK harness processes); 0 or less means 90% of the memory free now.
func Open(ordinal int, budgetBytes int64) (_ *Device, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

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
	d := &Device{dev: dev, ctx: ctx, done: make(chan struct{}), refs: map[*RefHandle]struct{}{}}
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

	if err := d.load(); err != nil {
		return nil, err
	}
	d.blas = new(cublas.Standard)
	if err := d.blas.Init(); err != nil {
		d.blas = nil
		return nil, classify("open: create the cuBLAS handle", err)
	}
	d.lanes = make(chan *lane, Lanes)
	for range Lanes {
		l := &lane{}
		d.allLanes = append(d.allLanes, l)
		if l.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return nil, classify("open: create a stream", err)
		}
		if l.evIn, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return nil, classify("open: create an event", err)
		}
		if l.evOut, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return nil, classify("open: create an event", err)
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

// load loads the two PTX modules and looks up every kernel.
func (d *Device) load() error {
	for _, m := range []struct {
		name    string
		ptx     []byte
		kernels []*kernel
		names   []string
	}{
		{"transforms/raster", raster.PTX,
			[]*kernel{&d.k.toa, &d.k.toaNDVI, &d.k.ndvi, &d.k.composite},
			[]string{"toa", "toa_ndvi", "ndvi", "composite"}},
		{"transforms/tensor", tensor.PTX,
			[]*kernel{&d.k.stdUnit, &d.k.stdZScore, &d.k.biasReLU, &d.k.softmax, &d.k.argmax, &d.k.sqNorms, &d.k.knn},
			[]string{"standardize_unit", "standardize_zscore", "bias_relu", "softmax_rows", "argmax_rows", "row_sqnorms", "knn_finish"}},
	} {
		// The driver JIT-compiles the PTX for this GPU here; its log says why
		// when it cannot (a driver older than the PTX ISA, a GPU below compute_80).
		jitLog := &cu.JITErrorLogBuffer{Buffer: make([]byte, 8192)}
		mod, err := cu.LoadDataEx(string(m.ptx), jitLog)
		if err != nil {
			msg := strings.TrimRight(string(jitLog.Buffer), "\x00 \n")
			return classify(fmt.Sprintf("open: load the PTX of %s (GPU compute capability %d.%d, driver CUDA %d; JIT log: %q)",
				m.name, d.info.ComputeMajor, d.info.ComputeMinor, d.info.DriverVersion, msg), err)
		}
		d.modules = append(d.modules, mod)
		for i, name := range m.names {
			fn, err := mod.Function(name)
			if err != nil {
				return classify("open: kernel "+name+" of "+m.name, err)
			}
			*m.kernels[i] = kernel{name: name, fn: fn}
		}
	}
	return nil
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

// Close waits for the calls in flight, frees everything the Device holds (reference
// sets included) and releases the primary context. Calls after Close return
// ErrClosed. After a fatal error Close still releases what it can; the process
// should exit anyway.
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
	d.refsMu.Lock()
	refs := make([]*RefHandle, 0, len(d.refs))
	for r := range d.refs {
		refs = append(refs, r)
	}
	d.refsMu.Unlock()
	for _, r := range refs {
		r.mu.Lock()
		keep(r.freeLocked())
		r.mu.Unlock()
	}
	for _, l := range d.allLanes {
		if l.stream != (cu.Stream{}) {
			keep(l.stream.Synchronize())
			keep(l.stream.Destroy())
		}
		for _, ev := range []*cu.Event{&l.evIn, &l.evOut} {
			if *ev != (cu.Event{}) {
				keep(cu.DestroyEvent(ev))
			}
		}
		for _, b := range []*devBuf{&l.in, &l.out, &l.tmp} {
			keep(d.freeBuf(b))
		}
		keep(l.pinIn.release())
		keep(l.pinOut.release())
	}
	if d.blas != nil {
		keep(d.blas.Close())
	}
	for _, m := range d.modules {
		keep(m.Unload())
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

// acquire takes an idle lane, locks the goroutine to its OS thread and makes the
// context current on it (driver calls act on the thread's current context); the
// returned function undoes that and gives the lane back.
func (d *Device) acquire() (*lane, func(), error) {
	if err := d.usable(); err != nil {
		return nil, nil, err
	}
	var l *lane
	select {
	case l = <-d.lanes:
	case <-d.done:
		return nil, nil, ErrClosed
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

func (d *Device) freeBuf(b *devBuf) error {
	if b.size == 0 {
		return nil
	}
	err := d.free(b.ptr, b.size)
	*b = devBuf{}
	return err
}

// reserve makes the lane's device buffers hold at least in, out and tmp bytes. It
// first frees the buffers that are too small, so that their bytes count for the new
// ones; when the budget or CUDA refuses, it frees the idle lanes' buffers and tries
// once more, at the exact sizes.
func (d *Device) reserve(op string, l *lane, in, out, tmp int64) error {
	bufs := []*devBuf{&l.in, &l.out, &l.tmp}
	sizes := []int64{in, out, tmp}
	for i, b := range bufs {
		if b.size < sizes[i] {
			if err := d.freeBuf(b); err != nil {
				return d.fail(op+": free", err)
			}
		}
	}
	grow := func(exact bool) error {
		for i, b := range bufs {
			if sizes[i] == 0 || b.size >= sizes[i] {
				continue
			}
			n := sizes[i]
			if !exact {
				n = roundUp(n, bufGranule)
			}
			p, err := d.alloc(op, n)
			if err != nil {
				return err
			}
			*b = devBuf{ptr: p, size: n}
		}
		return nil
	}
	err := grow(false)
	if errors.Is(err, ErrOutOfMemory) {
		if terr := d.trimIdle(); terr != nil {
			return d.fail(op+": free", terr)
		}
		err = grow(true)
	}
	return err
}

// trimIdle frees the device buffers of the lanes no call is using.
func (d *Device) trimIdle() error {
	var idle []*lane
	defer func() {
		for _, l := range idle {
			d.lanes <- l
		}
	}()
	var errs []error
	for {
		select {
		case l := <-d.lanes:
			idle = append(idle, l)
			for _, b := range []*devBuf{&l.in, &l.out, &l.tmp} {
				if err := d.freeBuf(b); err != nil {
					errs = append(errs, err)
				}
			}
		default:
			return errors.Join(errs...)
		}
	}
}

// seg is one array of a call's packed input or output buffer: the host slices of its
// pieces, placed back to back (several planes as one array). Arrays start at
// multiples of 256 bytes.
type seg [][]byte

func one(b []byte) seg { return seg{b} }

// pack returns the offset of each array and the total size.
func pack(segs []seg) ([]int64, int64) {
	offs := make([]int64, len(segs))
	var size int64
	for i, s := range segs {
		size = roundUp(size, align)
		offs[i] = size
		for _, p := range s {
			size += int64(len(p))
		}
	}
	return offs, size
}

// run is the frame of every call: on a lane, it packs the inputs into the pinned
// buffer, uploads them (one async copy), lets body enqueue the kernels on the lane's
// stream (given the device address of each input and output array and of tmp
// scratch bytes), downloads the outputs (one async copy), waits for the stream and
// unpacks the outputs into the host slices of out.
func (d *Device) run(op string, in, out []seg, tmp int64, body func(l *lane, in, out []cu.DevicePtr, tmp cu.DevicePtr) error) error {
	l, done, err := d.acquire()
	if err != nil {
		return err
	}
	defer done()
	inOff, inSize := pack(in)
	outOff, outSize := pack(out)
	if err := d.reserve(op, l, inSize, outSize, tmp); err != nil {
		return err
	}
	if inSize > 0 {
		if err := l.pinIn.ensure(inSize); err != nil {
			return d.fail(op+": staging", err)
		}
		buf := l.pinIn.bytes()
		for i, s := range in {
			o := inOff[i]
			for _, p := range s {
				o += int64(copy(buf[o:], p))
			}
		}
		if err := cu.MemcpyHtoDAsync(l.in.ptr, l.pinIn.ptr(), inSize, l.stream); err != nil {
			return d.fail(op+": upload", err)
		}
	}
	inPtr := make([]cu.DevicePtr, len(in))
	for i, o := range inOff {
		inPtr[i] = l.in.ptr + cu.DevicePtr(o)
	}
	outPtr := make([]cu.DevicePtr, len(out))
	for i, o := range outOff {
		outPtr[i] = l.out.ptr + cu.DevicePtr(o)
	}
	if err := body(l, inPtr, outPtr, l.tmp.ptr); err != nil {
		// Wait for what was queued, so the lane's buffers are free for the next call.
		if serr := l.stream.Synchronize(); serr != nil {
			return d.fail(op, serr)
		}
		return err
	}
	if outSize > 0 {
		if err := l.pinOut.ensure(outSize); err != nil {
			return d.fail(op+": staging", err)
		}
		if err := cu.MemcpyDtoHAsync(l.pinOut.ptr(), l.out.ptr, outSize, l.stream); err != nil {
			return d.fail(op+": download", err)
		}
	}
	if err := l.stream.Synchronize(); err != nil {
		return d.fail(op, err)
	}
	buf := l.pinOut.bytes()
	for i, s := range out {
		o := outOff[i]
		for _, p := range s {
			o += int64(copy(p, buf[o:]))
		}
	}
	return nil
}

// Launch geometry helpers.
const (
	blockThreads  = 256 // every kernel: 256 threads (8 warps) per block
	rowsPerBlock  = 8   // row-wise kernels: one warp per row
	blocksPerSM   = 32  // grid-stride kernels: enough blocks to fill the GPU, no more
	maxGridBlocks = math.MaxInt32
)

// grid1D is the grid of a grid-stride kernel over n elements: one thread per element
// up to 32 blocks of 256 per SM, beyond which threads loop.
func (d *Device) grid1D(n int64) int {
	return int(max(1, min((n+blockThreads-1)/blockThreads, int64(blocksPerSM*d.info.SMs))))
}

// gridRows is the grid of a one-warp-per-row kernel.
func gridRows(rows int64) int { return int((rows + rowsPerBlock - 1) / rowsPerBlock) }

// launch enqueues kernel k on the lane's stream with grid blocks of block threads.
// Every argument is a cu.DevicePtr, an int64 (int) or a float64, matching the
// kernels' 8-byte parameters (cu's Launch copies 8 bytes per parameter).
func (d *Device) launch(l *lane, k kernel, grid, block int, args ...any) error {
	slots := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cu.DevicePtr:
			slots[i] = uint64(v)
		case int64:
			slots[i] = uint64(v)
		case int:
			slots[i] = uint64(int64(v))
		case float64:
			slots[i] = math.Float64bits(v)
		default:
			panic(fmt.Sprintf("cuda: kernel %s: argument %d is a %T", k.name, i, a))
		}
		params[i] = unsafe.Pointer(&slots[i])
	}
	if grid < 1 || grid > maxGridBlocks {
		return fmt.Errorf("cuda: kernel %s: %d blocks", k.name, grid)
	}
	if err := k.fn.Launch(grid, 1, 1, block, 1, 1, 0, l.stream, params); err != nil {
		return d.fail("launch "+k.name, err)
	}
	return nil
}

// gemm enqueues the column-major cuBLAS product C = op(A) op(B) (alpha 1, beta 0; C
// is m x n, op(A) m x k, op(B) k x n) after the work queued on the lane's stream and
// before the work queued on it next. cu/blas offers no way to set the handle's
// stream, so cuBLAS runs on the legacy default stream; the lanes' streams are
// non-blocking (no implicit synchronisation with it), so two events order the two:
// the default stream waits for evIn (recorded after the lane's uploads), and the
// lane waits for evOut (recorded after the Sgemm). blasMu makes the three steps one
// sequence on the default stream, so that lanes do not wait for each other's
// uploads. No TF32: cuBLAS's default math mode keeps Sgemm in full float32.
func (d *Device) gemm(l *lane, op string, tA, tB blas.Transpose, m, n, k int, a cu.DevicePtr, lda int, b cu.DevicePtr, ldb int, c cu.DevicePtr, ldc int) error {
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v < 1 || v > math.MaxInt32 {
			return fmt.Errorf("cuda: %s: matrix dimension %d out of cuBLAS's range", op, v)
		}
	}
	if err := l.evIn.Record(l.stream); err != nil {
		return d.fail(op+": record", err)
	}
	aLen, bLen := lda*k, ldb*n
	if tA != blas.NoTrans {
		aLen = lda * m
	}
	if tB != blas.NoTrans {
		bLen = ldb * k
	}
	d.blasMu.Lock()
	defer d.blasMu.Unlock()
	if err := cu.NoStream.Wait(l.evIn, 0); err != nil {
		return d.fail(op+": wait", err)
	}
	d.blas.Sgemm(tA, tB, m, n, k, 1, deviceFloats(a, aLen), lda, deviceFloats(b, bLen), ldb, 0, deviceFloats(c, ldc*n), ldc)
	if err := d.blas.Err(); err != nil {
		// cu/blas keeps the first error in the handle: replace it.
		_ = d.blas.Close()
		nb := new(cublas.Standard)
		if ierr := nb.Init(); ierr != nil {
			return d.fail(op+": Sgemm", errors.Join(err, ierr))
		}
		d.blas = nb
		// A failed launch may hide a sticky error: the context's next sync tells.
		if serr := cu.Synchronize(); serr != nil {
			return d.fail(op+": Sgemm", serr)
		}
		return d.fail(op+": Sgemm", err)
	}
	if err := l.evOut.Record(cu.NoStream); err != nil {
		return d.fail(op+": record", err)
	}
	if err := l.stream.Wait(l.evOut, 0); err != nil {
		return d.fail(op+": wait", err)
	}
	return nil
}

func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// asBytes views a slice's memory as bytes (no copy).
func asBytes[T uint8 | uint16 | int32 | float32 | float64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
