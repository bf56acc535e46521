package gpu

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Entries parses the kernel entry points of a PTX module: for each kernel,
// the size in bytes of each parameter.
func Entries(ptx []byte) (map[string][]int, error) {
	out := map[string][]int{}
	text := string(ptx)
	for _, m := range entryRE.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		end := strings.IndexByte(text[m[1]:], ')')
		if end < 0 {
			return nil, fmt.Errorf("gpu: PTX entry %s: no closing parenthesis", name)
		}
		var sizes []int
		for _, p := range paramRE.FindAllStringSubmatch(text[m[1]:m[1]+end], -1) {
			bits := 0
			fmt.Sscan(p[1], &bits)
			sizes = append(sizes, bits/8)
		}
		out[name] = sizes
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("gpu: no .entry in the PTX")
	}
	return out, nil
}

var (
	entryRE = regexp.MustCompile(`\.entry\s+([A-Za-z_$][\w$]*)\s*\(`)
	paramRE = regexp.MustCompile(`\.param\s+\.[a-z]+?(\d+)\s`)
)

// Recorder is a Call without a device: it keeps device memory in host slices
// and runs no kernel, but checks what a launch asks of the device as a GPU
// would: every kernel exists in its module's PTX with as many 8-byte
// parameters as the launch passes, grids and blocks are in range, pointer
// arguments and Gemm operands lie inside memory the Call holds, and Download
// reads inside it. Families' tests run each step's launch against a Recorder
// on the step's sample input, so that a launch naming a kernel that is not
// there, or passing the wrong arguments, fails CI rather than a GPU machine.
type Recorder struct {
	// Info is what Device returns; SMs defaults to 132 (an H100).
	Info Info
	// Launches are the kernels launched, in order.
	Launches []Launched

	mu       sync.Mutex
	next     Ptr
	mem      map[Ptr][]byte
	resident map[any]Ptr
	entries  map[*Module]map[string][]int
}

// Launched is one launch a Recorder saw.
type Launched struct {
	Kernel      Kernel
	Grid, Block int
	Args        []any
}

var _ Call = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{Info: Info{Name: "recorder (no device)", SMs: 132, ComputeMajor: 9}, next: 1 << 32,
		mem: map[Ptr][]byte{}, resident: map[any]Ptr{}, entries: map[*Module]map[string][]int{}}
}

func (r *Recorder) alloc(n int64) (Ptr, error) {
	if n < 0 || n > 1<<40 {
		return 0, fmt.Errorf("gpu: allocation of %d bytes", n)
	}
	p := r.next
	r.mem[p] = make([]byte, n)
	r.next += Ptr((n + 511) &^ 255) // a gap: one past the end is not another buffer
	return p, nil
}

// span finds the allocation holding [p, p+n).
func (r *Recorder) span(p Ptr, n int64) ([]byte, error) {
	for base, b := range r.mem {
		if p >= base && p <= base+Ptr(len(b)) {
			off := int64(p - base)
			if n < 0 || off+n > int64(len(b)) {
				return nil, fmt.Errorf("gpu: %d bytes at %#x run past the end of a %d-byte buffer", n, uint64(p), len(b))
			}
			return b[off : off+n], nil
		}
	}
	return nil, fmt.Errorf("gpu: address %#x is not in any buffer of the call", uint64(p))
}

// Upload implements Call.
func (r *Recorder) Upload(host []byte) (Ptr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, err := r.alloc(int64(len(host)))
	if err == nil {
		copy(r.mem[p], host)
	}
	return p, err
}

// Alloc implements Call.
func (r *Recorder) Alloc(n int64) (Ptr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alloc(n)
}

// Copy implements Call.
func (r *Recorder) Copy(dst Ptr, host []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.span(dst, int64(len(host)))
	if err == nil {
		copy(b, host)
	}
	return err
}

// Download implements Call.
func (r *Recorder) Download(host []byte, src Ptr) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.span(src, int64(len(host)))
	if err == nil {
		copy(host, b)
	}
	return err
}

// CopyDevice implements Call.
func (r *Recorder) CopyDevice(dst, src Ptr, n int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	from, err := r.span(src, n)
	if err != nil {
		return err
	}
	to, err := r.span(dst, n)
	if err == nil {
		copy(to, from)
	}
	return err
}

// Launch implements Call: it checks the kernel and its arguments.
func (r *Recorder) Launch(k Kernel, grid, block int, args ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k.Module == nil {
		return fmt.Errorf("gpu: kernel %q has no module", k.Name)
	}
	entries, ok := r.entries[k.Module]
	if !ok {
		var err error
		if entries, err = Entries(k.Module.PTX); err != nil {
			return fmt.Errorf("gpu: module %s: %w", k.Module.Name, err)
		}
		r.entries[k.Module] = entries
	}
	params, ok := entries[k.Name]
	if !ok {
		names := make([]string, 0, len(entries))
		for n := range entries {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("gpu: kernel %s is not in the module's PTX (it has %s)", k, strings.Join(names, ", "))
	}
	if len(params) != len(args) {
		return fmt.Errorf("gpu: kernel %s takes %d parameters, the launch passes %d", k, len(params), len(args))
	}
	for i, a := range args {
		if params[i] != 8 {
			return fmt.Errorf("gpu: kernel %s: parameter %d is %d bytes; the project's kernels take 8-byte parameters", k, i, params[i])
		}
		switch v := a.(type) {
		case Ptr:
			if v == 0 {
				continue // an optional output the kernel skips
			}
			if _, err := r.span(v, 0); err != nil {
				return fmt.Errorf("gpu: kernel %s: argument %d: %w", k, i, err)
			}
		case int, int64, float64:
		default:
			return fmt.Errorf("gpu: kernel %s: argument %d is a %T, want a Ptr, int, int64 or float64", k, i, a)
		}
	}
	if grid < 1 || grid > math.MaxInt32 || block < 1 || block > 1024 {
		return fmt.Errorf("gpu: kernel %s: grid %d, block %d out of range", k, grid, block)
	}
	r.Launches = append(r.Launches, Launched{Kernel: k, Grid: grid, Block: block, Args: args})
	return nil
}

// Gemm implements Call: it checks that each operand lies inside a buffer.
func (r *Recorder) Gemm(transA, transB bool, m, n, k int, a Ptr, lda int, b Ptr, ldb int, c Ptr, ldc int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkGemm("gemm", transA, transB, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, 1)
}

// GemmStridedBatched implements Call: it checks that every product's
// operands lie inside a buffer, and that the products' C do not overlap.
func (r *Recorder) GemmStridedBatched(transA, transB bool, m, n, k int, a Ptr, lda int, strideA int64, b Ptr, ldb int, strideB int64, c Ptr, ldc int, strideC int64, batch int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkGemm("batched gemm", transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, c, ldc, strideC, batch)
}

// GemmOperands describes the operands of a product (batched or not):
// each operand's rows, columns and extent (the elements one matrix spans,
// (rows-1) x ld + cols), and the span of all batch of them (elements from
// the first one's start to the last one's end), or an error saying which
// is malformed. Emulators and recorders share it.
func GemmOperands(transA, transB bool, m, n, k int, lda int, strideA int64, ldb int, strideB int64, ldc int, strideC int64, batch int) (spans [3]int64, err error) {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if batch < 1 {
		return spans, fmt.Errorf("gpu: %d products", batch)
	}
	for i, op := range []struct {
		name           string
		rows, cols, ld int
		stride         int64
	}{{"A", ar, ac, lda, strideA}, {"B", br, bc, ldb, strideB}, {"C", m, n, ldc, strideC}} {
		if op.rows < 1 || op.cols < 1 || op.ld < op.cols {
			return spans, fmt.Errorf("gpu: %s is %dx%d with row stride %d", op.name, op.rows, op.cols, op.ld)
		}
		extent := int64(op.rows-1)*int64(op.ld) + int64(op.cols)
		if op.stride < 0 {
			return spans, fmt.Errorf("gpu: %s's stride is %d: strides must not be negative", op.name, op.stride)
		}
		if op.name == "C" && batch > 1 && op.stride < extent {
			return spans, fmt.Errorf("gpu: the matrices of C are %d elements apart and span %d each: they overlap", op.stride, extent)
		}
		spans[i] = int64(batch-1)*op.stride + extent
	}
	return spans, nil
}

func (r *Recorder) checkGemm(what string, transA, transB bool, m, n, k int, a Ptr, lda int, strideA int64, b Ptr, ldb int, strideB int64, c Ptr, ldc int, strideC int64, batch int) error {
	spans, err := GemmOperands(transA, transB, m, n, k, lda, strideA, ldb, strideB, ldc, strideC, batch)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, what)
	}
	for i, p := range []Ptr{a, b, c} {
		if _, err := r.span(p, 4*spans[i]); err != nil {
			return fmt.Errorf("gpu: %s: %s: %w", what, "ABC"[i:i+1], err)
		}
	}
	return nil
}

// Resident implements Call.
func (r *Recorder) Resident(key any, size int64, fill func(c Call, p Ptr) error) (Ptr, error) {
	r.mu.Lock()
	if p, ok := r.resident[key]; ok {
		r.mu.Unlock()
		return p, nil
	}
	p, err := r.alloc(size)
	r.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := fill(r, p); err != nil {
		return 0, err
	}
	r.mu.Lock()
	r.resident[key] = p
	r.mu.Unlock()
	return p, nil
}

// Output implements Call: Go memory, 64-byte aligned as shared memory is.
func (r *Recorder) Output(n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("gpu: output of %d bytes", n)
	}
	b := make([]byte, n+64)
	off := 0
	if n > 0 {
		off = int(64-uintptr(unsafePointer(b))%64) % 64
	}
	return b[off : off+n : off+n], nil
}

// Sync implements Call.
func (r *Recorder) Sync() error { return nil }

// Device implements Call.
func (r *Recorder) Device() Info { return r.Info }
