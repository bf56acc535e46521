package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// Tensors in a model (initializers, Constant values, attribute tensors) and
// in ONNX's test data are TensorProtos. Their data is in raw_data (little
// endian) or in the typed fields that onnx.proto assigns per type; external
// data (data_location EXTERNAL) is read by the loader before this.

// ArrayOf converts a TensorProto to an array. what names it in errors. The
// array's data is its own (raw_data is copied into aligned memory).
func ArrayOf(t *onnxpb.TensorProto, what string) (nd.Array, error) {
	typ := nd.DType(t.GetDataType())
	if !typ.Supported() {
		name := onnxpb.TensorProto_DataType_name[int32(t.GetDataType())]
		if name == "" {
			name = fmt.Sprintf("data type %d", t.GetDataType())
		}
		return nd.Array{}, fmt.Errorf("%s: element type %s is not supported", what, name)
	}
	if t.Segment != nil {
		return nd.Array{}, fmt.Errorf("%s: segmented tensors are not supported", what)
	}
	shape := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		if d < 0 || d > nd.MaxElements {
			return nd.Array{}, fmt.Errorf("%s: dimension %d is %d", what, i, d)
		}
		shape[i] = int(d)
	}
	n, err := nd.Numel(shape)
	if err != nil {
		return nd.Array{}, fmt.Errorf("%s: %w", what, err)
	}
	size := typ.Size()
	if raw := t.GetRawData(); raw != nil || t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		if int64(len(raw)) != int64(n)*int64(size) {
			return nd.Array{}, fmt.Errorf("%s: %v %v needs %d bytes of data, the tensor holds %d", what, typ, nd.ShapeString(shape), int64(n)*int64(size), len(raw))
		}
		a := nd.Array{Type: typ, Shape: shape, Data: nd.Bytes(len(raw))}
		copy(a.Data, raw)
		if !littleEndian {
			swapBytes(a.Data, size)
		}
		if typ == nd.Bool {
			for i, b := range a.Data {
				if b > 1 {
					a.Data[i] = 1
				}
			}
		}
		return a, nil
	}
	src := protoValues(t, typ)
	if have := src.Len(); have != n {
		return nd.Array{}, fmt.Errorf("%s: %v %v needs %d values, the tensor holds %d", what, typ, nd.ShapeString(shape), n, have)
	}
	if err := checkNarrow(t.Int32Data, typ); err != nil {
		return nd.Array{}, fmt.Errorf("%s: %w", what, err)
	}
	a, err := nd.New(typ, shape...)
	if err != nil {
		return nd.Array{}, fmt.Errorf("%s: %w", what, err)
	}
	dst := a
	if typ == nd.Float16 || typ == nd.BFloat16 { // the bits of halves
		dst = nd.Array{Type: nd.Uint16, Shape: a.Shape, Data: a.Data}
	}
	castInto(dst, src, dst.Type) // narrower types wrapped, bools x != 0
	return a, nil
}

// checkNarrow refuses a value of int32_data outside the range of the
// tensor's type, int8, uint8, int16 or uint16 (onnx.proto stores those
// widened to int32): a uint8 zero point of 300 is an error, not 44.
func checkNarrow(v []int32, typ nd.DType) error {
	var lo, hi int32
	switch typ {
	case nd.Int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case nd.Uint8:
		lo, hi = 0, math.MaxUint8
	case nd.Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case nd.Uint16:
		lo, hi = 0, math.MaxUint16
	default:
		return nil
	}
	for i, x := range v {
		if x < lo || x > hi {
			return fmt.Errorf("element %d of int32_data is %d, outside %v's range [%d, %d]", i, x, typ, lo, hi)
		}
	}
	return nil
}

// protoValues are the values of a tensor without raw_data: the typed field
// that onnx.proto keeps values of type typ in, as an array of its own type.
func protoValues(t *onnxpb.TensorProto, typ nd.DType) nd.Array {
	switch typ {
	case nd.Float32:
		return nd.Of(t.FloatData)
	case nd.Float64:
		return nd.Of(t.DoubleData)
	case nd.Int64:
		return nd.Of(t.Int64Data)
	case nd.Uint32, nd.Uint64:
		return nd.Of(t.Uint64Data)
	}
	return nd.Of(t.Int32Data) // int32, int16, int8, uint16, uint8, bool, float16, bfloat16
}

// TensorOf converts an array to a TensorProto with raw_data (a copy), named
// name: for test data and for the models this package writes.
func TensorOf(name string, a nd.Array) *onnxpb.TensorProto {
	dims := make([]int64, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = int64(d)
	}
	raw := append([]byte{}, a.Data...)
	if !littleEndian {
		swapBytes(raw, a.Type.Size())
	}
	dt := int32(a.Type)
	return &onnxpb.TensorProto{Name: &name, DataType: &dt, Dims: dims, RawData: raw}
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func swapBytes(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		for j := 0; j < size/2; j++ {
			b[i+j], b[i+size-1-j] = b[i+size-1-j], b[i+j]
		}
	}
}

// widen returns a with Float16 and BFloat16 elements widened to float32:
// the runtime computes in float32 (see Model).
func widen(a nd.Array) nd.Array {
	if a.Type != nd.Float16 && a.Type != nd.BFloat16 {
		return a
	}
	out, _ := nd.Convert(a, nd.Float32)
	return out
}
