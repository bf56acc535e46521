package onnx

import (
	"errors"
	"fmt"
	"math"
	"strings"

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
	src, dst := in[0], out[0]
	ss, ds := src.Type.Size(), dst.Type.Size()
	parallel.For(src.Len(), 2, func(lo, hi int) {
		castInto(nd.Array{Type: dst.Type, Shape: []int{hi - lo}, Data: dst.Data[lo*ds : hi*ds]},
			nd.Array{Type: src.Type, Shape: []int{hi - lo}, Data: src.Data[lo*ss : hi*ss]}, k.to)
	})
	return nil
}

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
func castInto(dst, src nd.Array, to nd.DType) {
	switch src.Type {
	case nd.Float32:
		castFrom(dst, nd.MustAs[float32](src), to)
	case nd.Float64:
		castFrom(dst, nd.MustAs[float64](src), to)
	case nd.Int8:
		castFrom(dst, nd.MustAs[int8](src), to)
	case nd.Int16:
		castFrom(dst, nd.MustAs[int16](src), to)
	case nd.Int32:
		castFrom(dst, nd.MustAs[int32](src), to)
	case nd.Int64:
		castFrom(dst, nd.MustAs[int64](src), to)
	case nd.Uint8:
		castFrom(dst, nd.MustAs[uint8](src), to)
	case nd.Uint16:
		castFrom(dst, nd.MustAs[uint16](src), to)
	case nd.Uint32:
		castFrom(dst, nd.MustAs[uint32](src), to)
	case nd.Uint64:
		castFrom(dst, nd.MustAs[uint64](src), to)
	case nd.Bool: // 0 or 1 in each byte, as uint8s
		castFrom(dst, nd.MustAs[uint8](nd.Array{Type: nd.Uint8, Shape: src.Shape, Data: src.Data}), to)
	default:
		panic(fmt.Sprintf("castInto from %v", src.Type))
	}
}

func castFrom[S numElem](dst nd.Array, s []S, to nd.DType) {
	var z S
	_, f64 := any(z).(float64)
	float := f64 || isF32[S]()
	switch dst.Type {
	case nd.Float32:
		d := nd.MustAs[float32](dst)
		switch to {
		case nd.Float16:
			toHalf(d, s)
		case nd.BFloat16:
			toBHalf(d, s)
		default:
			convert(d, s)
		}
	case nd.Float64:
		convert(nd.MustAs[float64](dst), s)
	case nd.Int8:
		toInt(nd.MustAs[int8](dst), s, float)
	case nd.Int16:
		toInt(nd.MustAs[int16](dst), s, float)
	case nd.Int32:
		toInt(nd.MustAs[int32](dst), s, float)
	case nd.Int64:
		toInt(nd.MustAs[int64](dst), s, float)
	case nd.Uint8:
		toInt(nd.MustAs[uint8](dst), s, float)
	case nd.Uint16:
		toInt(nd.MustAs[uint16](dst), s, float)
	case nd.Uint32:
		toInt(nd.MustAs[uint32](dst), s, float)
	case nd.Uint64:
		d := nd.MustAs[uint64](dst)
		if float {
			for i, v := range s {
				d[i] = truncU64(float64(v))
			}
			return
		}
		convert(d, s)
	case nd.Bool:
		d := nd.MustAs[bool](dst)
		for i, v := range s {
			d[i] = v != 0
		}
	default:
		panic(fmt.Sprintf("castInto to %v", dst.Type))
	}
}

// toInt converts to an integer type narrower than 64 bits or int64: floats
// through truncI64, then wrapped.
func toInt[D intElem, S numElem](d []D, s []S, float bool) {
	d = d[:len(s)]
	if !float {
		convert(d, s)
		return
	}
	for i, v := range s {
		d[i] = D(truncI64(float64(v)))
	}
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
