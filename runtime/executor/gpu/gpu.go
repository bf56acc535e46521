// Package gpu is the device API a step's GPU launch is written against.
//
// The executor runs a batch as one Call (a stream with its own device
// buffers), and the launch uploads the batch's arrays, launches kernels from
// its family's PTX module, multiplies matrices with cuBLAS, and downloads its
// results into host memory the executor hands out.
//
// Why an interface in a pure Go package: the launch code of a step lives with
// the step, in its family's package (behind the cuda build tag), and the CUDA
// implementation of Call (package runtime/executor/cuda) needs cgo and a GPU.
// Written against this interface, a launch compiles and is checked anywhere:
// the family's tests run it against a Recorder, which checks every kernel it
// launches against the family's PTX (the kernel exists, the number of 8-byte
// parameters matches), without a GPU. And the executor's device layer knows
// no step: it serves any Call.
//
// A Call's work runs in the order it is enqueued, asynchronously; Download
// results are in place once the launch has returned (the executor waits for
// the stream). Device buffers from Upload and Alloc belong to the Call and
// are reused after it; Resident buffers outlive it.
package gpu

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
	"unsafe"
)

// Ptr is a device address.
type Ptr uint64

// Offset returns the address n bytes after p.
func (p Ptr) Offset(n int64) Ptr { return p + Ptr(n) }

// Info describes the device a Call runs on, for launch geometry.
type Info struct {
	// Name is the device's name, e.g. "NVIDIA H100 80GB HBM3".
	Name string
	// SMs is the number of streaming multiprocessors.
	SMs int
	// ComputeMajor and ComputeMinor are the compute capability.
	ComputeMajor, ComputeMinor int
}

// Call is one batch's work on the device. Every method may be called only
// from the goroutine running the launch.
type Call interface {
	// Upload copies host to a new device buffer of the Call. Host memory in
	// the executor's shared-memory arena (a batch's input arrays) is
	// page-locked: the copy is one DMA, with no staging.
	Upload(host []byte) (Ptr, error)
	// Alloc returns an uninitialised device buffer of n bytes, the Call's.
	Alloc(n int64) (Ptr, error)
	// Copy copies host to the device memory at dst (len(host) bytes).
	Copy(dst Ptr, host []byte) error
	// Download copies len(host) bytes at src to host, complete when the
	// launch has returned.
	Download(host []byte, src Ptr) error
	// CopyDevice copies n bytes at src to dst, on the device.
	CopyDevice(dst, src Ptr, n int64) error
	// Launch enqueues kernel k on grid blocks of block threads. Every
	// argument is a Ptr, an int, an int64 or a float64: the kernels take
	// 8-byte parameters (a pointer, a long long or a double).
	Launch(k Kernel, grid, block int, args ...any) error
	// Gemm enqueues the float32 product C = op(A) op(B) of row-major
	// matrices: C is m x n, op(A) m x k, op(B) k x n; op(X) is X or, with
	// trans, its transpose; lda, ldb and ldc are the row strides. Full
	// float32 (no TF32).
	Gemm(transA, transB bool, m, n, k int, a Ptr, lda int, b Ptr, ldb int, c Ptr, ldc int) error
	// GemmStridedBatched enqueues batch products C_i = op(A_i) op(B_i),
	// each as Gemm's, of the matrices at a + i*strideA, b + i*strideB and
	// c + i*strideC (strides in elements, not bytes). A stride of 0
	// repeats an operand: one weight matrix for every image of a batch.
	// The C_i must not overlap. Full float32 (no TF32).
	GemmStridedBatched(transA, transB bool, m, n, k int, a Ptr, lda int, strideA int64, b Ptr, ldb int, strideB int64, c Ptr, ldc int, strideC int64, batch int) error
	// Resident returns device memory of size bytes kept across calls under
	// key (a model's weights, a reference set): the first Call with a key
	// allocates it and runs fill to write it; later ones get it as it is.
	// Resident data counts in the executor's memory budget and the least
	// recently used goes when the budget needs room. key must be comparable
	// and stable while the data is in use (the side value's pointer).
	Resident(key any, size int64, fill func(c Call, p Ptr) error) (Ptr, error)
	// Sync waits for the work enqueued so far: Downloads are then in place,
	// for a launch that finishes its batch on the host (a vote).
	Sync() error
	// Output returns n bytes of host memory for a result: shared memory of
	// the response, page-locked, so that a Download into it is the only
	// copy the result makes in the executor. The codec of the step's output
	// finds arrays placed there and sends them as they are.
	Output(n int) ([]byte, error)
	// Device describes the device.
	Device() Info
}

// Number is an element type of the arrays a launch moves.
type Number interface {
	~uint8 | ~uint16 | ~int32 | ~uint32 | ~float32 | ~float64 | ~int64
}

// Bytes views s as bytes, without a copy.
func Bytes[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}

// Upload copies s to a new device buffer of c.
func Upload[T Number](c Call, s []T) (Ptr, error) { return c.Upload(Bytes(s)) }

// Download copies len(dst) elements at src to dst.
func Download[T Number](c Call, dst []T, src Ptr) error { return c.Download(Bytes(dst), src) }

// Output returns n elements of host result memory (see Call.Output).
func Output[T Number](c Call, n int) ([]T, error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	b, err := c.Output(n * size)
	if err != nil || n == 0 {
		return nil, err
	}
	if uintptr(unsafe.Pointer(&b[0]))%uintptr(size) != 0 {
		return nil, fmt.Errorf("gpu: output memory at %p is not aligned for %T", &b[0], zero)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n), nil
}

// Launch geometry the project's kernels share.
const (
	// BlockThreads is the block size of every kernel: 256 threads, 8 warps.
	BlockThreads = 256
	// RowsPerBlock is the rows a block of a one-warp-per-row kernel covers.
	RowsPerBlock = 8
	blocksPerSM  = 32
)

// Grid1D is the grid of a grid-stride kernel over n elements: one thread
// per element up to 32 blocks of 256 per SM, beyond which threads loop.
func Grid1D(info Info, n int64) int {
	sms := max(1, info.SMs)
	return int(max(1, min((n+BlockThreads-1)/BlockThreads, int64(blocksPerSM*sms))))
}

// GridRows is the grid of a one-warp-per-row kernel over rows rows.
func GridRows(rows int64) int { return int(max(1, (rows+RowsPerBlock-1)/RowsPerBlock)) }

// Module is a family's PTX: its kernels, compiled from the family's .cu
// source. The device loads every registered module when it opens (the
// driver JIT-compiles PTX for the GPU then), so a module that does not load
// fails the executor's start, not a batch.
type Module struct {
	// Name names the module in errors, e.g. "transforms/raster".
	Name string
	// PTX is the module's PTX text.
	PTX []byte
}

// Kernel names a kernel of a module.
type Kernel struct {
	Module *Module
	Name   string
}

// Kernel returns the kernel called name of m.
func (m *Module) Kernel(name string) Kernel { return Kernel{Module: m, Name: name} }

func (k Kernel) String() string { return k.Module.Name + "." + k.Name }

var (
	modMu   sync.Mutex
	modules = map[string]*Module{}
)

// NewModule registers a family's PTX under name and returns it; call it
// from a package-level variable of the family. It panics if the name is
// taken by another module (a programming error, found at init).
func NewModule(name string, ptx []byte) *Module {
	modMu.Lock()
	defer modMu.Unlock()
	if m, ok := modules[name]; ok {
		panic(fmt.Sprintf("gpu.NewModule: module %q registered twice", m.Name))
	}
	m := &Module{Name: name, PTX: ptx}
	modules[name] = m
	return m
}

// Modules returns the registered modules, sorted by name.
func Modules() []*Module {
	modMu.Lock()
	defer modMu.Unlock()
	out := make([]*Module, 0, len(modules))
	for _, m := range modules {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func unsafePointer(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// Timings collects the time a Call's device work took by phase (host to
// device, kernel, device to host), when the executor profiles a batch: the
// device layer times each enqueued operation with events (which costs a
// little, so only then).
type Timings struct {
	mu sync.Mutex
	d  map[string]time.Duration
}

// Phases of the device work.
const (
	PhaseHostToDevice = "host to device"
	PhaseKernel       = "kernel"
	PhaseDeviceToHost = "device to host"
)

// Add adds d to phase.
func (t *Timings) Add(phase string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.d == nil {
		t.d = map[string]time.Duration{}
	}
	t.d[phase] += d
}

// Get returns the time of phase.
func (t *Timings) Get(phase string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.d[phase]
}

type timingsKey struct{}

// WithTimings returns ctx carrying t: the device layer adds the phases of the
// Call it runs for ctx to it.
func WithTimings(ctx context.Context, t *Timings) context.Context {
	return context.WithValue(ctx, timingsKey{}, t)
}

// TimingsFrom returns the Timings ctx carries, or nil.
func TimingsFrom(ctx context.Context) *Timings {
	t, _ := ctx.Value(timingsKey{}).(*Timings)
	return t
}
