package onnx

import (
	"encoding/binary"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// What the operators' launches share. Each operator's Launch sits beside its
// CPU code, in the _gpu.go file paired with its ops_*.go, and enqueues the
// kernels of kernels.cu (and cuBLAS products) that compute what its Run
// computes on the CPU, from the same shape logic (the CPU code's helpers
// compute the geometry; only the loops differ). Float32 is the type the
// device computes; other types take the data-movement kernels (any element
// size), the integer arithmetic and comparisons of int32 and int64, Where,
// Not and Cast, and run on the host otherwise (ErrOnHost).
//
// Here: a grid-stride launch, a run's scratch memory and error flag, the
// argument lists of shapes and windows, and the strided copy and the fill
// that the data-movement operators share (their kernels are in gpu_util.cu).

var (
	kCopyStrided = Module.Kernel("copy_strided")
	kFill        = Module.Kernel("fill")
)

// maxDims is the rank the kernels take after dimensions are merged.
const maxDims = 6

// launch enqueues k over n elements (a grid-stride kernel); nothing for 0.
func (d *Device) launch(k gpu.Kernel, n int, args ...any) error {
	if n == 0 {
		return nil
	}
	return d.Call.Launch(k, gpu.Grid1D(d.Call.Device(), int64(n)), gpu.BlockThreads, args...)
}

// scratch returns device memory of at least n bytes for a launch's
// temporaries (im2col's columns, a transposed input), reused by the
// following nodes: the stream runs them after this one's work.
func (d *Device) scratch(n int64) (gpu.Ptr, error) {
	if n <= d.scratchSize {
		return d.scratchPtr, nil
	}
	p, err := d.Call.Alloc(n)
	if err != nil {
		return 0, err
	}
	d.scratchPtr, d.scratchSize = p, n
	return p, nil
}

// aside returns device memory of the run's for a's bytes (grown to the
// largest, as scratch is, and apart from it), with a's data copied there
// where copyData: an input that the step's output is written over
// (Overwriter), read after the output is, or a step's result before its
// last copy (a convolution's NCHW sums before channels last).
func (d *Device) aside(a DevArray, copyData bool) (gpu.Ptr, error) {
	n := a.Bytes()
	if n > d.asideSize {
		p, err := d.Call.Alloc(n)
		if err != nil {
			return 0, err
		}
		d.asidePtr, d.asideSize = p, n
	}
	if !copyData || n == 0 {
		return d.asidePtr, nil
	}
	return d.asidePtr, d.Call.CopyDevice(d.asidePtr, a.Ptr, n)
}

// errorFlag returns the device word that kernels set for an input out of
// their domain, zeroed the first time.
func (d *Device) errorFlag() (gpu.Ptr, error) {
	if d.flag != 0 {
		return d.flag, nil
	}
	p, err := gpu.Upload(d.Call, []uint32{0, 0})
	if err != nil {
		return 0, err
	}
	d.flag = p
	return p, nil
}

// dims6 appends each list padded to maxDims with zeros; false if one is
// longer.
func dims6(args []any, lists ...[]int) ([]any, bool) {
	for _, l := range lists {
		if len(l) > maxDims {
			return nil, false
		}
		for i := range maxDims {
			v := 0
			if i < len(l) {
				v = l[i]
			}
			args = append(args, int64(v))
		}
	}
	return args, true
}

func i64(v int) int64 { return int64(v) }

func at(p gpu.Ptr, elems, size int) gpu.Ptr { return p.Offset(int64(elems) * int64(size)) }

// copyStrided enqueues the strided copy c (strided.go) of elements of size
// bytes from src to dst.
func (d *Device) copyStrided(dst, src gpu.Ptr, size int, c strided) error {
	c, ok := c.simplify()
	if !ok {
		return nil
	}
	if len(c.shape) == 0 { // one element
		c.shape, c.dstSt, c.srcSt = []int{1}, []int{1}, []int{1}
	}
	args, ok := dims6([]any{at(dst, c.dstOff, size), at(src, c.srcOff, size), i64(numel(c.shape)), i64(size), i64(len(c.shape))},
		c.shape, c.srcSt, c.dstSt)
	if !ok {
		return ErrOnHost
	}
	return d.launch(kCopyStrided, numel(c.shape), args...)
}

// fill enqueues n copies of the element value (its bytes) at dst.
func (d *Device) fill(dst gpu.Ptr, n int, value []byte) error {
	var w [8]byte
	copy(w[:], value)
	return d.launch(kFill, n, dst, i64(n), i64(len(value)), int64(binary.LittleEndian.Uint64(w[:])))
}

// devMetas are the inputs as Infer sees them, with the values known before
// the run.
func devMetas(in []DevArray) []Meta {
	out := make([]Meta, len(in))
	for i, a := range in {
		if a.Defined() {
			out[i] = Meta{Type: a.Type, Shape: a.Shape, Value: a.Host}
		}
	}
	return out
}

// allFloat32 reports whether every defined array is float32.
func allFloat32(arrays ...DevArray) bool {
	for _, a := range arrays {
		if a.Defined() && a.Type != nd.Float32 {
			return false
		}
	}
	return true
}

func ptrOr0(a DevArray) gpu.Ptr {
	if !a.Defined() {
		return 0
	}
	return a.Ptr
}

// arrayOf is in[i], or the zero DevArray past the end.
func arrayOf(in []DevArray, i int) DevArray {
	if i < len(in) {
		return in[i]
	}
	return DevArray{}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// geo3 appends a geometry's spatial lists, 3 values each: in, k, out,
// stride, padLo, dil.
func geo3(args []any, g geometry) []any {
	for _, l := range [][3]int{g.in, g.k, g.out, g.stride, g.padLo, g.dil} {
		args = append(args, i64(l[0]), i64(l[1]), i64(l[2]))
	}
	return args
}

// hostInts is the integer array a: its value known before the run, or else
// downloaded (a wait for the stream), for a launch that needs a small
// argument computed on the device (CumSum's axis, Trilu's k).
func (d *Device) hostInts(a DevArray) ([]int64, error) {
	if a.Host != nil {
		return nd.Int64s(*a.Host)
	}
	if !a.Type.IsInt() || a.Len() > 64 {
		return nil, ErrOnHost
	}
	h := nd.Array{Type: a.Type, Shape: a.Shape, Data: make([]byte, a.Bytes())}
	if len(h.Data) > 0 {
		if err := d.Call.Download(h.Data, a.Ptr); err != nil {
			return nil, err
		}
		if err := d.Call.Sync(); err != nil {
			return nil, err
		}
	}
	return nd.Int64s(h)
}
