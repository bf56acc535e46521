package onnx

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// Cast (opsets 1, 6, 9, 13): between every supported type. Opset 1 names
// the type ("FLOAT"), later opsets number it (TensorProto.DataType).
//
// The conversions are nd.Convert's, in typed loops: floats to integers
// truncate toward zero (NaN and values out of range give what x86 gives,
// the most negative int64, then wrapped to the target: ONNX leaves them
// undefined); integers wrap; numbers to bool are x != 0 (NaN is true),
// bool to numbers 0 or 1. Float16 and BFloat16 values are float32 in the
// runtime, so Cast to FLOAT16 or BFLOAT16 rounds each value to that
// precision (to nearest, ties to even; a float64 rounded once, not through
// float32) and outputs float32; a graph output declared float16 is
// narrowed at the end. Strings are refused at load.

func init() {
	RegisterOp(OpDef{Name: "Cast", Versions: []int{1, 6, 9, 13}, New: newCast})
}

// castKernel casts to to (Float16 and BFloat16: rounded, held as float32).
type castKernel struct{ to nd.DType }

func newCast(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	var to int64
	if n.Since < 6 {
		name := a.String("to", "")
		v, ok := onnxpb.TensorProto_DataType_value[strings.ToUpper(name)]
		if !ok && a.Err() == nil {
			return nil, fmt.Errorf("attribute to is %q: not an element type (FLOAT, INT64, ...)", name)
		}
		to = int64(v)
	} else {
		if !a.Has("to") {
			return nil, errors.New("attribute to is required")
		}
		to = a.Int("to", 0)
	}
	if err := a.Err(); err != nil {
		return nil, err
	}
	t := nd.DType(to)
	switch {
	case to == int64(nd.String):
		return nil, errors.New("attribute to is STRING: string tensors are not supported")
	case to < 0 || to > math.MaxUint8 || !t.Supported():
		name := onnxpb.TensorProto_DataType_name[int32(to)]
		if name == "" || to != int64(int32(to)) {
			name = fmt.Sprintf("element type %d", to)
		}
		return nil, fmt.Errorf("attribute to is %s: not a supported element type", name)
	}
	return &castKernel{to: t}, nil
}

func (k *castKernel) Infer(in []Meta) ([]Meta, error) {
	if !in[0].Type.Supported() {
		return nil, fmt.Errorf("input type %v is not supported", in[0].Type)
	}
	return []Meta{{Type: internal(k.to), Shape: in[0].Shape}}, nil
}

func (k *castKernel) Run(in, out []nd.Array) error {
	parallel.ForWith(in[0].Len(), 2, castRun{src: in[0], dst: out[0], to: k.to}, (*castRun).values)
	return nil
}

// castRun is a run of Cast.
type castRun struct {
	src, dst nd.Array
	to       nd.DType
}

// values casts values lo..hi.
func (r *castRun) values(lo, hi int) { castRange(r.dst, r.src, r.to, lo, hi) }

// castArray returns a converted to t (a itself when it is of type t).
func castArray(a nd.Array, t nd.DType) nd.Array {
	if a.Type == t {
		return a
	}
	out := nd.Zeros(t, a.Shape...)
	castInto(out, a, t)
	return out
}

// castInto converts src's elements into dst (as many, of the runtime's
// types: no Float16 or BFloat16 arrays). to is the Cast's target: when it
// is Float16 or BFloat16, dst is float32 and each value is rounded to it.
//
// Between numbers, each value goes through the widest type of its source's
// kind (float64, int64 or uint64, castBlock values at a time), which holds
// it exactly: the conversion to dst's type is then the one from the value
// itself, and the source's type and the destination's each take one
// dispatch, not one per pair of types.
func castInto(dst, src nd.Array, to nd.DType) { castRange(dst, src, to, 0, src.Len()) }

// castRange is castInto of the elements lo..hi.
func castRange(dst, src nd.Array, to nd.DType, lo, hi int) {
	if src.Type == nd.Bool { // 0 or 1 in each byte, as uint8s
		src = nd.Array{Type: nd.Uint8, Shape: src.Shape, Data: src.Data}
	}
	if dst.Type == src.Type && to == dst.Type {
		size := dst.Type.Size()
		copy(dst.Data[lo*size:hi*size], src.Data[lo*size:hi*size])
		return
	}
	from, err := numeric[castSource]("Cast", src.Type)
	if err != nil {
		panic(err) // Infer let through only the runtime's types
	}
	switch {
	case dst.Type == nd.Bool:
		from.nonZero(src, lo, nd.MustAs[bool](dst)[lo:hi])
		return
	case to == nd.Float16 || to == nd.BFloat16:
		from.halves(src, lo, nd.MustAs[float32](dst)[lo:hi], to)
		return
	}
	into, err := numeric[castDest]("Cast", dst.Type)
	if err != nil {
		panic(err)
	}
	switch {
	case src.Type.IsFloat():
		castBlocks(lo, hi, func(lo int, w []float64) { from.float64s(src, lo, w); into.fromFloat64s(dst, lo, w) })
	case src.Type.IsSigned():
		castBlocks(lo, hi, func(lo int, w []int64) { from.int64s(src, lo, w); into.fromInt64s(dst, lo, w) })
	default:
		castBlocks(lo, hi, func(lo int, w []uint64) { from.uint64s(src, lo, w); into.fromUint64s(dst, lo, w) })
	}
}

// castBlock is how many values a cast holds in its widest type at a time.
const castBlock = 256

// castBlocks calls convert for the blocks of up to castBlock values that
// cover lo..hi, at the first's index, w a buffer of their length.
func castBlocks[W wideElem](lo, hi int, convert func(at int, w []W)) {
	// From the pool: an array here would go to the heap (convert's w
	// escapes through the casts' interfaces).
	f := getFloats(2 * castBlock)
	defer putFloats(f)
	buf := unsafe.Slice((*W)(unsafe.Pointer(unsafe.SliceData(*f))), castBlock)
	for at := lo; at < hi; at += castBlock {
		convert(at, buf[:min(castBlock, hi-at)])
	}
}

// castSource reads a cast's source values.
type castSource interface {
	// float64s, int64s and uint64s write the values from index lo on into
	// w: a float type's into float64s, a signed type's into int64s, an
	// unsigned type's into uint64s.
	float64s(src nd.Array, lo int, w []float64)
	int64s(src nd.Array, lo int, w []int64)
	uint64s(src nd.Array, lo int, w []uint64)
	// nonZero writes x != 0 (NaN is true) of the values from index lo on
	// into d.
	nonZero(src nd.Array, lo int, d []bool)
	// halves writes the values from index lo on rounded to Float16 or
	// BFloat16 (to) into d.
	halves(src nd.Array, lo int, d []float32, to nd.DType)
}

// castDest writes a cast's values from index lo on.
type castDest interface {
	// fromFloat64s truncates toward zero into integers (truncI64,
	// truncU64), rounds to nearest into floats.
	fromFloat64s(dst nd.Array, lo int, w []float64)
	// fromInt64s and fromUint64s wrap into integers, round to nearest into
	// floats.
	fromInt64s(dst nd.Array, lo int, w []int64)
	fromUint64s(dst nd.Array, lo int, w []uint64)
}

func (numbers[T, W]) float64s(src nd.Array, lo int, w []float64) {
	convert(w, nd.MustAs[T](src)[lo:lo+len(w)])
}

func (numbers[T, W]) int64s(src nd.Array, lo int, w []int64) {
	convert(w, nd.MustAs[T](src)[lo:lo+len(w)])
}

func (numbers[T, W]) uint64s(src nd.Array, lo int, w []uint64) {
	convert(w, nd.MustAs[T](src)[lo:lo+len(w)])
}

func (numbers[T, W]) nonZero(src nd.Array, lo int, d []bool) {
	for i, v := range nd.MustAs[T](src)[lo : lo+len(d)] {
		d[i] = v != 0
	}
}

func (numbers[T, W]) halves(src nd.Array, lo int, d []float32, to nd.DType) {
	s := nd.MustAs[T](src)[lo : lo+len(d)]
	if to == nd.Float16 {
		toHalf(d, s)
		return
	}
	toBHalf(d, s)
}

func (numbers[T, W]) fromFloat64s(dst nd.Array, lo int, w []float64) {
	d := nd.MustAs[T](dst)[lo : lo+len(w)]
	switch {
	case isFloat[T]():
		convert(d, w)
	case nd.TypeOf[T]() == nd.Uint64:
		for i, v := range w {
			d[i] = T(truncU64(v))
		}
	default: // through int64, then wrapped
		for i, v := range w {
			d[i] = T(truncI64(v))
		}
	}
}

func (numbers[T, W]) fromInt64s(dst nd.Array, lo int, w []int64) {
	convert(nd.MustAs[T](dst)[lo:lo+len(w)], w)
}

func (numbers[T, W]) fromUint64s(dst nd.Array, lo int, w []uint64) {
	convert(nd.MustAs[T](dst)[lo:lo+len(w)], w)
}

// toHalf rounds to float16 precision (overflow to ±Inf), keeping float32.
// A float64 rounds once (nd.HalfOf64); an integer is exact in float64 to
// 2^53, far past float16's range.
func toHalf[S numElem](d []float32, s []S) {
	d = d[:len(s)]
	if isF32[S]() {
		for i, v := range s {
			d[i] = nd.HalfOf(float32(v)).Float32()
		}
		return
	}
	for i, v := range s {
		d[i] = nd.HalfOf64(float64(v)).Float32()
	}
}

// toBHalf rounds to bfloat16 precision, keeping float32. Other types than
// float32 are rounded to float32 toward odd first (rounding to odd, then to
// nearest, rounds once when the first keeps two more bits; float32 keeps
// 16 more).
func toBHalf[S numElem](d []float32, s []S) {
	d = d[:len(s)]
	if isF32[S]() {
		for i, v := range s {
			d[i] = nd.BHalfOf(float32(v)).Float32()
		}
		return
	}
	for i, v := range s {
		d[i] = nd.BHalfOf(toOddF32(float64(v))).Float32()
	}
}

func isF32[S numElem]() bool {
	var z S
	_, ok := any(z).(float32)
	return ok
}

// toOddF32 is v rounded to float32 toward odd: truncated toward zero, the
// last bit set when that was inexact. (Infinities and NaN convert as they
// are; a finite v past float32's range gives the largest float32, odd.)
func toOddF32(v float64) float32 {
	f := float32(v)
	if float64(f) == v || v != v {
		return f
	}
	b := math.Float32bits(f)
	if math.Abs(float64(f)) > math.Abs(v) { // rounded away from zero: step back
		b--
	}
	return math.Float32frombits(b | 1)
}
