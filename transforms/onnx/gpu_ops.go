package onnx

import (
	"encoding/binary"
	"math"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The operators' launches: each Kernel's Launch enqueues the kernels of
// kernels.cu (and cuBLAS products) that compute what its Run computes on the
// CPU, from the same shape logic (the CPU code's helpers compute the
// geometry; only the loops differ). Float32 is the type the device
// computes; other types take the data-movement kernels (any element size),
// the integer arithmetic and comparisons of int32 and int64, Where, Not and
// Cast, and run on the host otherwise (ErrOnHost).

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

// ---- elementwise ----

func (k *ewUnary) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	n := in[0].Len()
	return d.launch(kUnary, n, int64(k.op), in[0].Ptr, out[0].Ptr, i64(n), float64(k.alpha), float64(k.beta))
}

func (k *clipKernel) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in...) {
		return ErrOnHost
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	var lop, hip gpu.Ptr
	if k.inputs {
		lop, hip = ptrOr0(arrayOf(in, 1)), ptrOr0(arrayOf(in, 2))
	} else {
		if k.hasLo {
			lo = float64(float32(k.lo))
		}
		if k.hasHi {
			hi = float64(float32(k.hi))
		}
	}
	n := in[0].Len()
	return d.launch(kClip, n, in[0].Ptr, out[0].Ptr, i64(n), lo, hi, lop, hip)
}

// arrayOf is in[i], or the zero DevArray past the end.
func arrayOf(in []DevArray, i int) DevArray {
	if i < len(in) {
		return in[i]
	}
	return DevArray{}
}

// binary enqueues c = a op b, a and b read with shapes aShape and bShape
// broadcast to c's.
func (d *Device) binary(op ewOp, a, b, c DevArray, aShape, bShape []int) error {
	var k gpu.Kernel
	switch {
	case a.Type == nd.Float32 && b.Type == nd.Float32:
		k = kBinaryF32
	case op == ewPow || op == ewDiv || a.Type != b.Type:
		return ErrOnHost
	case a.Type == nd.Int64:
		k = kBinaryI64
	case a.Type == nd.Int32:
		k = kBinaryI32
	case a.Type == nd.Bool && op == ewEqual:
		k = kEqualBool
	default:
		return ErrOnHost
	}
	l := newEWLoop(c.Shape, aShape, bShape)
	var args []any
	if k != kEqualBool {
		args = append(args, int64(op))
	}
	args = append(args, a.Ptr, b.Ptr, c.Ptr, i64(l.n), i64(len(l.dims)))
	args, ok := dims6(args, l.dims, l.st[0], l.st[1])
	if !ok {
		return ErrOnHost
	}
	return d.launch(k, l.n, args...)
}

func (k *ewBinary) Launch(d *Device, in, out []DevArray) error {
	bShape, _, err := k.shapes(in[0].Shape, in[1].Shape)
	if err != nil {
		return err
	}
	return d.binary(k.op, in[0], in[1], out[0], in[0].Shape, bShape)
}

func (k *ewVariadic) Launch(d *Device, in, out []DevArray) error {
	c := out[0]
	if !allFloat32(in...) {
		return ErrOnHost
	}
	if len(in) == 1 {
		return d.Call.CopyDevice(c.Ptr, in[0].Ptr, c.Bytes())
	}
	if err := d.binary(k.op, in[0], in[1], c, in[0].Shape, in[1].Shape); err != nil {
		return err
	}
	for _, b := range in[2:] {
		if err := d.binary(k.op, c, b, c, c.Shape, b.Shape); err != nil {
			return err
		}
	}
	if k.mean {
		n := c.Len()
		return d.launch(kGemmEpilogue, n, c.Ptr, gpu.Ptr(0), int64(1), i64(n), 1/float64(len(in)), 0.0, int64(0), int64(0))
	}
	return nil
}

func (whereKernel) Launch(d *Device, in, out []DevArray) error {
	c, x, y, o := in[0], in[1], in[2], out[0]
	l := newEWLoop(o.Shape, c.Shape, x.Shape, y.Shape)
	args, ok := dims6([]any{o.Ptr, c.Ptr, x.Ptr, y.Ptr, i64(l.n), i64(x.Type.Size()), i64(len(l.dims))},
		l.dims, l.st[0], l.st[1], l.st[2])
	if !ok {
		return ErrOnHost
	}
	return d.launch(kWhere, l.n, args...)
}

func (notKernel) Launch(d *Device, in, out []DevArray) error {
	n := in[0].Len()
	return d.launch(kNot, n, in[0].Ptr, out[0].Ptr, i64(n))
}

// castTypes are the types the cast kernel converts between.
var castTypes = map[nd.DType]bool{nd.Float32: true, nd.Float64: true, nd.Uint8: true, nd.Int8: true,
	nd.Int16: true, nd.Int32: true, nd.Int64: true, nd.Bool: true}

func (k *castKernel) Launch(d *Device, in, out []DevArray) error {
	from, to := in[0].Type, k.to
	if from == to {
		return d.Call.CopyDevice(out[0].Ptr, in[0].Ptr, out[0].Bytes())
	}
	if !castTypes[from] || !castTypes[to] {
		return ErrOnHost // Float16 and BFloat16 rounding, unsigned wide types
	}
	n := in[0].Len()
	return d.launch(kCast, n, in[0].Ptr, out[0].Ptr, i64(n), int64(from), int64(to))
}

// ---- data movement ----

func (identity) Launch(*Device, []DevArray, []DevArray) error { return nil }

func (view) Launch(*Device, []DevArray, []DevArray) error { return nil }

func (c constant) Launch(d *Device, _, out []DevArray) error {
	if len(c.v.Data) == 0 {
		return nil
	}
	return d.Call.Copy(out[0].Ptr, c.v.Data)
}

func (k *transpose) Launch(d *Device, in, out []DevArray) error {
	c, err := k.copyPlan(in[0].Shape, out[0].Shape)
	if err != nil {
		return err
	}
	return d.copyStrided(out[0].Ptr, in[0].Ptr, in[0].Type.Size(), c)
}

func (k *slice) Launch(d *Device, in, out []DevArray) error {
	c, err := k.copyPlan(devMetas(in))
	if err != nil {
		return err
	}
	return d.copyStrided(out[0].Ptr, in[0].Ptr, in[0].Type.Size(), c)
}

func (expand) Launch(d *Device, in, out []DevArray) error {
	o := out[0].Shape
	return d.copyStrided(out[0].Ptr, in[0].Ptr, in[0].Type.Size(),
		strided{shape: o, dstSt: Strides(o), srcSt: BroadcastStrides(in[0].Shape, o)})
}

func (k *concat) Launch(d *Device, in, out []DevArray) error {
	o := out[0]
	axis, _ := NormAxis(int(k.axis), len(o.Shape))
	ost := Strides(o.Shape)
	off := 0
	for _, a := range in {
		err := d.copyStrided(o.Ptr, a.Ptr, o.Type.Size(),
			strided{shape: a.Shape, dstSt: ost, srcSt: Strides(a.Shape), dstOff: off * ost[axis]})
		if err != nil {
			return err
		}
		off += a.Shape[axis]
	}
	return nil
}

func (k *split) Launch(d *Device, in, out []DevArray) error {
	x := in[0]
	axis, _ := NormAxis(int(k.axis), len(x.Shape))
	metas, err := k.Infer(devMetas(in)) // the parts' shapes, left-out outputs' too
	if err != nil {
		return err
	}
	xst := Strides(x.Shape)
	off := 0
	for i, m := range metas {
		if i < len(out) && out[i].Defined() {
			err := d.copyStrided(out[i].Ptr, x.Ptr, x.Type.Size(),
				strided{shape: m.Shape, dstSt: Strides(m.Shape), srcSt: xst, srcOff: off * xst[axis]})
			if err != nil {
				return err
			}
		}
		off += m.Shape[axis]
	}
	return nil
}

func (k *pad) Launch(d *Device, in, out []DevArray) error {
	before, _, err := k.amounts(devMetas(in))
	if err != nil {
		return err
	}
	src, dst := in[0], out[0]
	size := src.Type.Size()
	if k.mode != "constant" {
		mode := int64(0)
		if k.mode == "edge" {
			mode = 1
		}
		if src.Len() == 0 {
			return ErrOnHost // the CPU's error, or nothing to read
		}
		n := dst.Len()
		args, ok := dims6([]any{dst.Ptr, src.Ptr, i64(n), i64(size), i64(len(dst.Shape)), mode}, dst.Shape, src.Shape, before)
		if !ok {
			return ErrOnHost
		}
		return d.launch(kPadMap, n, args...)
	}
	fill := nd.Scalar(k.value)
	if k.inputs && len(in) > 2 && in[2].Defined() {
		if in[2].Host == nil {
			return ErrOnHost
		}
		fill = *in[2].Host
	}
	v, err := nd.Convert(fill, src.Type)
	if err != nil {
		return err
	}
	if err := d.fill(dst.Ptr, dst.Len(), v.Data[:size]); err != nil {
		return err
	}
	c := strided{shape: make([]int, len(before)), dstSt: Strides(dst.Shape), srcSt: Strides(src.Shape)}
	for i := range before {
		lo := max(0, -before[i])
		hi := min(src.Shape[i], dst.Shape[i]-before[i])
		c.shape[i] = max(0, hi-lo)
		c.srcOff += lo * c.srcSt[i]
		c.dstOff += (lo + before[i]) * c.dstSt[i]
	}
	return d.copyStrided(dst.Ptr, src.Ptr, size, c)
}

func (k *gather) Launch(d *Device, in, out []DevArray) error {
	data, idx := in[0], in[1]
	if idx.Type != nd.Int64 && idx.Type != nd.Int32 {
		return ErrOnHost
	}
	axis, _ := NormAxis(int(k.axis), len(data.Shape))
	flag, err := d.errorFlag()
	if err != nil {
		return err
	}
	n := out[0].Len()
	return d.launch(kGather, n, out[0].Ptr, data.Ptr, idx.Ptr, i64(data.Type.Size()), i64(numel(data.Shape[:axis])),
		i64(data.Shape[axis]), i64(numel(data.Shape[axis+1:])), i64(idx.Len()), int64(boolInt(idx.Type == nd.Int64)), flag)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostValues computes a node whose inputs are all known before the run on
// the host and copies its outputs up (shape arithmetic the plan did not
// fold: too large, or a value a kernel does not compute).
func hostValues(d *Device, k Kernel, in, out []DevArray) error {
	hin := make([]nd.Array, len(in))
	for i, a := range in {
		if a.Defined() {
			if a.Host == nil {
				return ErrOnHost
			}
			hin[i] = *a.Host
		}
	}
	hout := make([]nd.Array, len(out))
	for i, a := range out {
		if a.Defined() {
			h, err := nd.New(a.Type, a.Shape...)
			if err != nil {
				return err
			}
			hout[i] = h
		}
	}
	if err := k.Run(hin, hout); err != nil {
		return err
	}
	for i, a := range out {
		if a.Defined() && len(hout[i].Data) > 0 {
			if err := d.Call.Copy(a.Ptr, hout[i].Data); err != nil {
				return err
			}
		}
	}
	return nil
}

func (k *shapeOp) Launch(d *Device, in, out []DevArray) error {
	// Shape reads only its input's shape.
	h := nd.Zeros(in[0].Type, in[0].Shape...)
	in = []DevArray{{Type: in[0].Type, Shape: in[0].Shape, Host: &h}}
	return hostValues(d, k, in, out)
}

func (k rangeOp) Launch(d *Device, in, out []DevArray) error { return hostValues(d, k, in, out) }

func (k *constantOfShape) Launch(d *Device, _, out []DevArray) error {
	return d.fill(out[0].Ptr, out[0].Len(), k.value.Data)
}

func (k *dropout) Launch(d *Device, in, out []DevArray) error {
	if k.trainFrom >= 0 && k.trainFrom < len(in) && in[k.trainFrom].Defined() {
		t := in[k.trainFrom]
		if t.Host == nil {
			return ErrOnHost
		}
		if v, _ := nd.Int64s(*t.Host); len(v) > 0 && v[0] != 0 {
			return ErrOnHost // training: the CPU's random mask
		}
	}
	if m := arrayOf(out, 1); m.Defined() {
		one, err := nd.Convert(nd.Scalar(true), m.Type)
		if err != nil {
			return err
		}
		return d.fill(m.Ptr, m.Len(), one.Data)
	}
	return nil
}
