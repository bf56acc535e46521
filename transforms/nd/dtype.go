package nd

import (
	"fmt"
	"strings"
)

// DType is an element type, numbered as ONNX's TensorProto.DataType.
type DType uint8

// The element types. The numbers are ONNX's (onnx.proto, TensorProto.DataType).
const (
	Undefined DType = 0
	Float32   DType = 1
	Uint8     DType = 2
	Int8      DType = 3
	Uint16    DType = 4
	Int16     DType = 5
	Int32     DType = 6
	Int64     DType = 7
	String    DType = 8 // not supported: named in errors only
	Bool      DType = 9
	Float16   DType = 10
	Float64   DType = 11
	Uint32    DType = 12
	Uint64    DType = 13
	BFloat16  DType = 16
)

var dtypes = [...]struct {
	name string
	size int
}{
	Float32:  {"float32", 4},
	Uint8:    {"uint8", 1},
	Int8:     {"int8", 1},
	Uint16:   {"uint16", 2},
	Int16:    {"int16", 2},
	Int32:    {"int32", 4},
	Int64:    {"int64", 8},
	String:   {"string", 0},
	Bool:     {"bool", 1},
	Float16:  {"float16", 2},
	Float64:  {"float64", 8},
	Uint32:   {"uint32", 4},
	Uint64:   {"uint64", 8},
	BFloat16: {"bfloat16", 2},
}

// Size is the size of an element in bytes (0 for an unsupported type).
func (t DType) Size() int {
	if int(t) < len(dtypes) {
		return dtypes[t].size
	}
	return 0
}

// Supported reports whether arrays of t can be held: every type above but
// Undefined and String.
func (t DType) Supported() bool { return t.Size() > 0 }

// IsFloat reports whether t is a floating-point type.
func (t DType) IsFloat() bool {
	return t == Float32 || t == Float64 || t == Float16 || t == BFloat16
}

// IsInt reports whether t is an integer type (signed or unsigned; not Bool).
func (t DType) IsInt() bool {
	switch t {
	case Uint8, Int8, Uint16, Int16, Int32, Int64, Uint32, Uint64:
		return true
	}
	return false
}

// IsSigned reports whether t holds negative values.
func (t DType) IsSigned() bool {
	return t.IsFloat() || t == Int8 || t == Int16 || t == Int32 || t == Int64
}

func (t DType) String() string {
	if int(t) < len(dtypes) && dtypes[t].name != "" {
		return dtypes[t].name
	}
	return fmt.Sprintf("dtype(%d)", uint8(t))
}

// ParseDType returns the type called name ("float32", "int64", ...; also
// NumPy's short names "f4", "i8", "u1", "?").
func ParseDType(name string) (DType, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for t, d := range dtypes {
		if d.name != "" && d.name == n && DType(t) != String {
			return DType(t), nil
		}
	}
	switch n {
	case "float", "f4":
		return Float32, nil
	case "double", "f8":
		return Float64, nil
	case "f2", "half":
		return Float16, nil
	case "i1":
		return Int8, nil
	case "i2":
		return Int16, nil
	case "i4", "int":
		return Int32, nil
	case "i8", "long":
		return Int64, nil
	case "u1":
		return Uint8, nil
	case "u2":
		return Uint16, nil
	case "u4":
		return Uint32, nil
	case "u8":
		return Uint64, nil
	case "?", "b1":
		return Bool, nil
	}
	return Undefined, fmt.Errorf("nd: unknown element type %q", name)
}

// Elem is the Go types of the elements: each maps to one DType (Half and
// BHalf to Float16 and BFloat16).
type Elem interface {
	float32 | float64 | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | bool | Half | BHalf
}

// TypeOf is the DType of T.
func TypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case bool:
		return Bool
	case Half:
		return Float16
	case BHalf:
		return BFloat16
	}
	panic("unreachable")
}
