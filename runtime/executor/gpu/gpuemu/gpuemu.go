// Package gpuemu is a device emulator for tests: a gpu.Call whose device
// memory is host memory, so that a family's launches run, and their
// results can be checked against the CPU, on a machine without a GPU.
//
// Device memory is Go allocations that the emulator keeps alive while they
// are the call's (or resident), and a gpu.Ptr is their address: a kernel
// compiled for the host (the family's kernels.cu built with a C++ compiler
// under an emulation header, see transforms/onnx/internal/kernelemu) reads
// and writes it directly. Products (Gemm, GemmStridedBatched) are computed
// here, in float64 accumulation. Kernel launches go to the function the
// family provides for its module (Kernels).
//
// It checks what a GPU would refuse, as gpu.Recorder does (the kernel is in
// its module's PTX with as many 8-byte parameters as passed, pointer
// arguments and product operands lie in the call's memory), and more that a
// GPU would not report but that breaks on one:
//   - every buffer has guard bytes before and after it, checked after every
//     launch and product: a kernel that writes out of bounds fails the
//     launch, naming the kernel;
//   - new buffers (Alloc) are filled with 0xFF bytes (NaN as floats), so a
//     result that reads memory nobody wrote shows;
//   - work is asynchronous as on a device: a Download lands in host memory
//     only at Sync or when the call ends (the destination reads 0xFF bytes
//     until then), and host memory given to Copy must not change before
//     then (checked at Sync and at the end);
//   - a call's buffers are poisoned and forgotten when it ends, so that a
//     pointer kept from an earlier call fails the check.
//
// Execution is eager and sequential: an operation runs when it is
// enqueued, on the calling goroutine.
package gpuemu

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// KernelFunc runs kernel k on the host over a grid of grid blocks of block
// threads; args are the launch's arguments as 8-byte parameter values (a
// pointer's address, an integer, a float64's bits), checked against the
// PTX.
type KernelFunc func(k gpu.Kernel, grid, block int, args []uint64) error

// Device is an emulated device: resident data and counters outlive its
// calls (Launch).
type Device struct {
	// Info is what a Call's Device returns: by default a device of 2 SMs,
	// so that grid-stride loops of gpu.Grid1D grids loop past 16384
	// elements.
	Info gpu.Info

	kernels map[*gpu.Module]KernelFunc

	mu       sync.Mutex
	resident map[any]*buffer
	entries  map[*gpu.Module]map[string][]int
	stats    Stats
	live     []*buffer // every buffer a Ptr may point into, by address
}

// Stats counts what the calls of a Device did.
type Stats struct {
	Calls, Launches, Products, DeviceCopies int
	// Syncs are the launches' own waits (Sync), not the device layer's at
	// the end of a call or after a resident fill.
	Syncs int
	// Uploads and Downloads are host-to-device and device-to-host copies,
	// with their bytes.
	Uploads, Downloads         int
	UploadBytes, DownloadBytes int64
	// Allocs are buffers a call took (Upload and Alloc), ResidentFills the
	// resident data filled.
	Allocs, ResidentFills int
	AllocBytes            int64
	// Kernels counts the launches of each kernel, "module.name".
	Kernels map[string]int
}

// New returns an emulated device whose modules' kernels run by the given
// functions.
func New(kernels map[*gpu.Module]KernelFunc) *Device {
	return &Device{
		Info:     gpu.Info{Name: "gpuemu (host memory)", SMs: 2, ComputeMajor: 9},
		kernels:  kernels,
		resident: map[any]*buffer{},
		entries:  map[*gpu.Module]map[string][]int{},
		stats:    Stats{Kernels: map[string]int{}},
	}
}

// Stats returns the counters so far.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.Kernels = make(map[string]int, len(d.stats.Kernels))
	for k, v := range d.stats.Kernels {
		s.Kernels[k] = v
	}
	return s
}

// ResetStats zeroes the counters.
func (d *Device) ResetStats() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats = Stats{Kernels: map[string]int{}}
}

// Launch runs fn with a Call, as the executor's device layer runs a
// step's launch: when fn returns, the call's work is complete (pending
// downloads land in host memory) and its buffers go. Its error is fn's, or
// what the end-of-call checks found.
func (d *Device) Launch(fn func(c gpu.Call) error) error {
	c := &Call{d: d}
	d.mu.Lock()
	d.stats.Calls++
	d.mu.Unlock()
	err := fn(c)
	if ferr := c.flush(); err == nil {
		err = ferr
	}
	c.finish()
	return err
}

// Memory returns the n bytes of device memory at p (for kernels written in
// Go, and tests), or an error if they are not inside one buffer.
func (d *Device) Memory(p gpu.Ptr, n int64) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.span(p, n)
}

// guard is the size of the guard zones around each buffer, guardByte
// their contents; buffers start 256-byte aligned, as cudaMalloc's.
const (
	guard     = 256
	guardByte = 0xA5
	poison    = 0xFF
)

// buffer is one allocation: mem is the usable bytes, raw the allocation
// with its guards.
type buffer struct {
	raw      []byte
	mem      []byte
	base     gpu.Ptr
	resident bool
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// newBuffer allocates n usable bytes between guards, filled with fill.
func newBuffer(n int64, fill byte) (*buffer, error) {
	if n < 0 || n > 1<<36 {
		return nil, fmt.Errorf("gpuemu: allocation of %d bytes", n)
	}
	raw := make([]byte, int(n)+3*guard)
	off := int(guard-addr(raw)%guard) % guard
	lo := off + guard
	b := &buffer{raw: raw, mem: raw[lo : lo+int(n) : lo+int(n)]}
	b.base = gpu.Ptr(addr(raw) + uintptr(lo))
	for i := range raw {
		raw[i] = guardByte
	}
	for i := range b.mem {
		b.mem[i] = fill
	}
	return b, nil
}

// intact reports whether b's guards hold their bytes.
func (b *buffer) intact() bool {
	lo := int(uintptr(b.base) - addr(b.raw))
	for _, v := range b.raw[lo-guard : lo] {
		if v != guardByte {
			return false
		}
	}
	hi := lo + len(b.mem)
	for _, v := range b.raw[hi : hi+guard] {
		if v != guardByte {
			return false
		}
	}
	return true
}

// add makes b addressable; d.mu is held.
func (d *Device) add(b *buffer) {
	i := sort.Search(len(d.live), func(i int) bool { return d.live[i].base > b.base })
	d.live = append(d.live, nil)
	copy(d.live[i+1:], d.live[i:])
	d.live[i] = b
}

// remove forgets b; d.mu is held.
func (d *Device) remove(b *buffer) {
	for i, x := range d.live {
		if x == b {
			d.live = append(d.live[:i], d.live[i+1:]...)
			return
		}
	}
}

// find returns the buffer holding address p (one past the end counts, for
// an empty span); d.mu is held.
func (d *Device) find(p gpu.Ptr) *buffer {
	i := sort.Search(len(d.live), func(i int) bool { return d.live[i].base > p }) - 1
	if i < 0 {
		return nil
	}
	b := d.live[i]
	if p > b.base+gpu.Ptr(len(b.mem)) {
		return nil
	}
	return b
}

// span returns the n bytes at p; d.mu is held.
func (d *Device) span(p gpu.Ptr, n int64) ([]byte, error) {
	b := d.find(p)
	if b == nil {
		return nil, fmt.Errorf("gpuemu: address %#x is not in any buffer of the call", uint64(p))
	}
	off := int64(p - b.base)
	if n < 0 || off+n > int64(len(b.mem)) {
		return nil, fmt.Errorf("gpuemu: %d bytes at %#x run past the end of a %d-byte buffer (at offset %d)", n, uint64(p), len(b.mem), off)
	}
	return b.mem[off : off+n : off+n], nil
}

// checkGuards fails if a kernel or product wrote outside its buffers;
// d.mu is held.
func (d *Device) checkGuards(what string) error {
	for _, b := range d.live {
		if !b.intact() {
			return fmt.Errorf("gpuemu: %s wrote outside its buffers: the guard bytes around the %d-byte buffer at %#x changed", what, len(b.mem), uint64(b.base))
		}
	}
	return nil
}

// Call is one emulated call: a gpu.Call.
type Call struct {
	d    *Device
	bufs []*buffer
	// pending downloads (landing at Sync) and the host memory given to
	// Copy since the last Sync, with what it held.
	downloads []pending
	copies    []pending
	done      bool
}

type pending struct {
	host, data []byte
}

var _ gpu.Call = (*Call)(nil)

func (c *Call) usable() error {
	if c.done {
		return fmt.Errorf("gpuemu: the call has ended")
	}
	return nil
}

func (c *Call) alloc(n int64, fill byte) (gpu.Ptr, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	b, err := newBuffer(max(n, 1), fill)
	if err != nil {
		return 0, err
	}
	b.mem = b.mem[:n:n]
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.add(b)
	c.bufs = append(c.bufs, b)
	d.stats.Allocs++
	d.stats.AllocBytes += n
	return b.base, nil
}

// Alloc implements gpu.Call: the buffer reads 0xFF bytes until written.
func (c *Call) Alloc(n int64) (gpu.Ptr, error) { return c.alloc(n, poison) }

// Upload implements gpu.Call.
func (c *Call) Upload(host []byte) (gpu.Ptr, error) {
	p, err := c.alloc(int64(len(host)), poison)
	if err != nil {
		return 0, err
	}
	return p, c.Copy(p, host)
}

// Copy implements gpu.Call.
func (c *Call) Copy(dst gpu.Ptr, host []byte) error {
	if err := c.usable(); err != nil {
		return err
	}
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.span(dst, int64(len(host)))
	if err != nil {
		return fmt.Errorf("gpuemu: copy to the device: %w", err)
	}
	copy(b, host)
	if len(host) > 0 {
		c.copies = append(c.copies, pending{host: host, data: bytes.Clone(host)})
	}
	d.stats.Uploads++
	d.stats.UploadBytes += int64(len(host))
	return nil
}

// Download implements gpu.Call: the bytes land in host at the next Sync
// (host reads 0xFF bytes until then).
func (c *Call) Download(host []byte, src gpu.Ptr) error {
	if err := c.usable(); err != nil {
		return err
	}
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.span(src, int64(len(host)))
	if err != nil {
		return fmt.Errorf("gpuemu: download: %w", err)
	}
	c.downloads = append(c.downloads, pending{host: host, data: bytes.Clone(b)})
	for i := range host {
		host[i] = poison
	}
	d.stats.Downloads++
	d.stats.DownloadBytes += int64(len(host))
	return nil
}

// CopyDevice implements gpu.Call; the ranges must not overlap.
func (c *Call) CopyDevice(dst, src gpu.Ptr, n int64) error {
	if err := c.usable(); err != nil {
		return err
	}
	if n <= 0 {
		return nil
	}
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	from, err := d.span(src, n)
	if err != nil {
		return fmt.Errorf("gpuemu: device copy: source: %w", err)
	}
	to, err := d.span(dst, n)
	if err != nil {
		return fmt.Errorf("gpuemu: device copy: destination: %w", err)
	}
	if src < dst+gpu.Ptr(n) && dst < src+gpu.Ptr(n) {
		return fmt.Errorf("gpuemu: device copy of %d bytes from %#x to %#x: the ranges overlap", n, uint64(src), uint64(dst))
	}
	copy(to, from)
	d.stats.DeviceCopies++
	return nil
}

// Launch implements gpu.Call: it checks the launch as gpu.Recorder does,
// runs the kernel's function, then checks the guards.
func (c *Call) Launch(k gpu.Kernel, grid, block int, args ...any) error {
	if err := c.usable(); err != nil {
		return err
	}
	d := c.d
	d.mu.Lock()
	if k.Module == nil {
		d.mu.Unlock()
		return fmt.Errorf("gpuemu: kernel %q has no module", k.Name)
	}
	fn := d.kernels[k.Module]
	if fn == nil {
		d.mu.Unlock()
		return fmt.Errorf("gpuemu: no kernels for module %s", k.Module.Name)
	}
	entries, ok := d.entries[k.Module]
	if !ok {
		var err error
		if entries, err = gpu.Entries(k.Module.PTX); err != nil {
			d.mu.Unlock()
			return fmt.Errorf("gpuemu: module %s: %w", k.Module.Name, err)
		}
		d.entries[k.Module] = entries
	}
	vals, err := d.checkLaunch(k, entries, grid, block, args)
	if err != nil {
		d.mu.Unlock()
		return err
	}
	d.stats.Launches++
	d.stats.Kernels[k.String()]++
	d.mu.Unlock()
	// The kernel runs without the lock: a Go kernel may call Memory.
	if err := fn(k, grid, block, vals); err != nil {
		return fmt.Errorf("gpuemu: kernel %s: %w", k, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.checkGuards("kernel " + k.String())
}

func (d *Device) checkLaunch(k gpu.Kernel, entries map[string][]int, grid, block int, args []any) ([]uint64, error) {
	params, ok := entries[k.Name]
	if !ok {
		names := make([]string, 0, len(entries))
		for n := range entries {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("gpuemu: kernel %s is not in the module's PTX (it has %s)", k, strings.Join(names, ", "))
	}
	if len(params) != len(args) {
		return nil, fmt.Errorf("gpuemu: kernel %s takes %d parameters, the launch passes %d", k, len(params), len(args))
	}
	if grid < 1 || grid > math.MaxInt32 || block < 1 || block > 1024 {
		return nil, fmt.Errorf("gpuemu: kernel %s: grid %d, block %d out of range", k, grid, block)
	}
	vals := make([]uint64, len(args))
	for i, a := range args {
		if params[i] != 8 {
			return nil, fmt.Errorf("gpuemu: kernel %s: parameter %d is %d bytes; the project's kernels take 8-byte parameters", k, i, params[i])
		}
		switch v := a.(type) {
		case gpu.Ptr:
			if v != 0 && d.find(v) == nil {
				return nil, fmt.Errorf("gpuemu: kernel %s: argument %d: address %#x is not in any buffer of the call", k, i, uint64(v))
			}
			vals[i] = uint64(v)
		case int:
			vals[i] = uint64(int64(v))
		case int64:
			vals[i] = uint64(v)
		case float64:
			vals[i] = math.Float64bits(v)
		default:
			return nil, fmt.Errorf("gpuemu: kernel %s: argument %d is a %T, want a Ptr, int, int64 or float64", k, i, a)
		}
	}
	return vals, nil
}

// Gemm implements gpu.Call.
func (c *Call) Gemm(transA, transB bool, m, n, k int, a gpu.Ptr, lda int, b gpu.Ptr, ldb int, cc gpu.Ptr, ldc int) error {
	return c.product("gemm", transA, transB, m, n, k, a, lda, 0, b, ldb, 0, cc, ldc, 0, 1)
}

// GemmStridedBatched implements gpu.Call.
func (c *Call) GemmStridedBatched(transA, transB bool, m, n, k int, a gpu.Ptr, lda int, strideA int64, b gpu.Ptr, ldb int, strideB int64, cc gpu.Ptr, ldc int, strideC int64, batch int) error {
	return c.product("batched gemm", transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, cc, ldc, strideC, batch)
}

// floats views b as float32s (b is 4-byte aligned: buffers are, and the
// operands' offsets are whole floats or the span check fails later).
func floats(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// product computes C_i = op(A_i) op(B_i), summing in float64.
func (c *Call) product(what string, transA, transB bool, m, n, k int, a gpu.Ptr, lda int, sa int64, b gpu.Ptr, ldb int, sb int64, cp gpu.Ptr, ldc int, sc int64, batch int) error {
	if err := c.usable(); err != nil {
		return err
	}
	spans, err := gpu.GemmOperands(transA, transB, m, n, k, lda, sa, ldb, sb, ldc, sc, batch)
	if err != nil {
		return fmt.Errorf("gpuemu: %s: %w", what, err)
	}
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	var ops [3][]float32
	for i, p := range []gpu.Ptr{a, b, cp} {
		if p%4 != 0 {
			return fmt.Errorf("gpuemu: %s: %s at %#x is not 4-byte aligned", what, "ABC"[i:i+1], uint64(p))
		}
		mem, err := d.span(p, 4*spans[i])
		if err != nil {
			return fmt.Errorf("gpuemu: %s: %s: %w", what, "ABC"[i:i+1], err)
		}
		ops[i] = floats(mem)
	}
	for i, p := range []gpu.Ptr{a, b} {
		if cp < p+gpu.Ptr(4*spans[i]) && p < cp+gpu.Ptr(4*spans[2]) {
			return fmt.Errorf("gpuemu: %s: C overlaps %s", what, "AB"[i:i+1])
		}
	}
	A, B, C := ops[0], ops[1], ops[2]
	for t := range int64(batch) {
		ao, bo, co := t*sa, t*sb, t*sc
		for i := range m {
			for j := range n {
				var s float64
				for p := range k {
					var x, y float32
					if transA {
						x = A[ao+int64(p*lda+i)]
					} else {
						x = A[ao+int64(i*lda+p)]
					}
					if transB {
						y = B[bo+int64(j*ldb+p)]
					} else {
						y = B[bo+int64(p*ldb+j)]
					}
					s += float64(x) * float64(y)
				}
				C[co+int64(i*ldc+j)] = float32(s)
			}
		}
	}
	d.stats.Products++
	return d.checkGuards(what)
}

// Resident implements gpu.Call: kept by the Device across its calls.
func (c *Call) Resident(key any, size int64, fill func(c gpu.Call, p gpu.Ptr) error) (gpu.Ptr, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	d := c.d
	d.mu.Lock()
	if b, ok := d.resident[key]; ok {
		d.mu.Unlock()
		if int64(len(b.mem)) != size {
			return 0, fmt.Errorf("gpuemu: resident data %v is %d bytes, asked for %d", key, len(b.mem), size)
		}
		return b.base, nil
	}
	b, err := newBuffer(max(size, 1), poison)
	if err != nil {
		d.mu.Unlock()
		return 0, err
	}
	b.mem = b.mem[:size:size]
	b.resident = true
	d.add(b)
	d.mu.Unlock()
	if err := fill(c, b.base); err != nil {
		d.mu.Lock()
		d.remove(b)
		d.mu.Unlock()
		return 0, err
	}
	// The device layer waits for a fill before other calls see it.
	if err := c.flush(); err != nil {
		return 0, err
	}
	d.mu.Lock()
	d.resident[key] = b
	d.stats.ResidentFills++
	d.mu.Unlock()
	return b.base, nil
}

// Sync implements gpu.Call: pending downloads land in host memory, and the
// host memory given to Copy must still hold what it did.
func (c *Call) Sync() error {
	if err := c.usable(); err != nil {
		return err
	}
	c.d.mu.Lock()
	c.d.stats.Syncs++
	c.d.mu.Unlock()
	return c.flush()
}

// flush completes the work enqueued so far (Sync, and the device layer's
// own waits: at the end of a call, after a resident fill).
func (c *Call) flush() error {
	for _, p := range c.downloads {
		copy(p.host, p.data)
	}
	c.downloads = nil
	var err error
	for _, p := range c.copies {
		if !bytes.Equal(p.host, p.data) && err == nil {
			err = fmt.Errorf("gpuemu: host memory given to Copy (%d bytes) changed before the copy was waited for", len(p.host))
		}
	}
	c.copies = nil
	return err
}

// Output implements gpu.Call: Go memory, 64-byte aligned as shared memory
// is.
func (c *Call) Output(n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("gpuemu: output of %d bytes", n)
	}
	b := make([]byte, n+64)
	off := int(64-addr(b)%64) % 64
	return b[off : off+n : off+n], nil
}

// Device implements gpu.Call.
func (c *Call) Device() gpu.Info { return c.d.Info }

// finish ends the call: its buffers are poisoned and forgotten.
func (c *Call) finish() {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range c.bufs {
		for i := range b.mem {
			b.mem[i] = poison
		}
		d.remove(b)
	}
	c.bufs = nil
	c.done = true
}
