package nd

import (
	"fmt"
	"math"
)

// Convert returns a's elements converted to type t (a itself when it is of
// type t), as ONNX's Cast does: floats to integers truncate toward zero
// (values out of the target's range are undefined, as in C), floats to
// Float16 and BFloat16 round to nearest even, numbers to Bool are x != 0,
// Bool to numbers 0 or 1.
func Convert(a Array, t DType) (Array, error) {
	if a.Type == t {
		return a, nil
	}
	if !t.Supported() {
		return Array{}, fmt.Errorf("cannot convert to %v: not supported", t)
	}
	if err := a.Validate(); err != nil {
		return Array{}, err
	}
	out, err := New(t, a.Shape...)
	if err != nil {
		return Array{}, err
	}
	ConvertInto(out, a)
	return out, nil
}

// ConvertInto converts src's elements into dst, which must have as many.
func ConvertInto(dst, src Array) {
	n := src.Len()
	switch {
	case dst.Type == src.Type:
		copy(dst.Data, src.Data)
	case src.Type == Float64 && dst.Type == Float16:
		s, d := MustAs[float64](src), MustAs[Half](dst)
		for i := range n {
			d[i] = HalfOf64(s[i])
		}
	case src.Type.IsFloat() || dst.Type.IsFloat() || dst.Type == Bool || src.Type == Bool:
		get, set := floatGetter(src), floatSetter(dst)
		for i := range n {
			set(i, get(i))
		}
	case isUnsigned(src.Type) && isUnsigned(dst.Type):
		get, set := uintGetter(src), uintSetter(dst)
		for i := range n {
			set(i, get(i))
		}
	default: // integers: through int64 (wrapping as C's conversions do)
		get, set := intGetter(src), intSetter(dst)
		for i := range n {
			set(i, get(i))
		}
	}
}

func isUnsigned(t DType) bool { return t == Uint8 || t == Uint16 || t == Uint32 || t == Uint64 }

// floatGetter reads element i of a as a float64 (int64 and uint64 beyond
// 2^53 round).
func floatGetter(a Array) func(int) float64 {
	switch a.Type {
	case Float32:
		s := MustAs[float32](a)
		return func(i int) float64 { return float64(s[i]) }
	case Float64:
		s := MustAs[float64](a)
		return func(i int) float64 { return s[i] }
	case Float16:
		s := MustAs[Half](a)
		return func(i int) float64 { return float64(s[i].Float32()) }
	case BFloat16:
		s := MustAs[BHalf](a)
		return func(i int) float64 { return float64(s[i].Float32()) }
	case Bool:
		s := MustAs[bool](a)
		return func(i int) float64 {
			if s[i] {
				return 1
			}
			return 0
		}
	case Uint64:
		s := MustAs[uint64](a)
		return func(i int) float64 { return float64(s[i]) }
	}
	g := intGetter(a)
	return func(i int) float64 { return float64(g(i)) }
}

func floatSetter(a Array) func(int, float64) {
	switch a.Type {
	case Float32:
		s := MustAs[float32](a)
		return func(i int, v float64) { s[i] = float32(v) }
	case Float64:
		s := MustAs[float64](a)
		return func(i int, v float64) { s[i] = v }
	case Float16:
		s := MustAs[Half](a)
		return func(i int, v float64) { s[i] = HalfOf(float32(v)) }
	case BFloat16:
		s := MustAs[BHalf](a)
		return func(i int, v float64) { s[i] = BHalfOf(float32(v)) }
	case Bool:
		s := MustAs[bool](a)
		return func(i int, v float64) { s[i] = v != 0 }
	case Uint64:
		s := MustAs[uint64](a)
		return func(i int, v float64) { s[i] = f64ToU64(v) }
	}
	set := intSetter(a)
	return func(i int, v float64) { set(i, f64ToI64(v)) }
}

// f64ToI64 truncates toward zero; NaN and values out of range give what
// x86's cvttsd2si gives (the minimum), as C code on x86 does.
func f64ToI64(v float64) int64 {
	if math.IsNaN(v) || v >= 9.223372036854775807e18 || v < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(v)
}

func f64ToU64(v float64) uint64 {
	if math.IsNaN(v) || v < 0 || v >= 1.8446744073709551615e19 {
		if v < 0 && v > -9.223372036854775808e18 {
			return uint64(int64(v))
		}
		return 0
	}
	return uint64(v)
}

func intGetter(a Array) func(int) int64 {
	switch a.Type {
	case Int8:
		s := MustAs[int8](a)
		return func(i int) int64 { return int64(s[i]) }
	case Int16:
		s := MustAs[int16](a)
		return func(i int) int64 { return int64(s[i]) }
	case Int32:
		s := MustAs[int32](a)
		return func(i int) int64 { return int64(s[i]) }
	case Int64:
		s := MustAs[int64](a)
		return func(i int) int64 { return s[i] }
	case Uint8:
		s := MustAs[uint8](a)
		return func(i int) int64 { return int64(s[i]) }
	case Uint16:
		s := MustAs[uint16](a)
		return func(i int) int64 { return int64(s[i]) }
	case Uint32:
		s := MustAs[uint32](a)
		return func(i int) int64 { return int64(s[i]) }
	case Uint64:
		s := MustAs[uint64](a)
		return func(i int) int64 { return int64(s[i]) }
	}
	panic(fmt.Sprintf("nd: %v is not an integer type", a.Type))
}

func intSetter(a Array) func(int, int64) {
	switch a.Type {
	case Int8:
		s := MustAs[int8](a)
		return func(i int, v int64) { s[i] = int8(v) }
	case Int16:
		s := MustAs[int16](a)
		return func(i int, v int64) { s[i] = int16(v) }
	case Int32:
		s := MustAs[int32](a)
		return func(i int, v int64) { s[i] = int32(v) }
	case Int64:
		s := MustAs[int64](a)
		return func(i int, v int64) { s[i] = v }
	case Uint8:
		s := MustAs[uint8](a)
		return func(i int, v int64) { s[i] = uint8(v) }
	case Uint16:
		s := MustAs[uint16](a)
		return func(i int, v int64) { s[i] = uint16(v) }
	case Uint32:
		s := MustAs[uint32](a)
		return func(i int, v int64) { s[i] = uint32(v) }
	case Uint64:
		s := MustAs[uint64](a)
		return func(i int, v int64) { s[i] = uint64(v) }
	}
	panic(fmt.Sprintf("nd: %v is not an integer type", a.Type))
}

func uintGetter(a Array) func(int) uint64 {
	g := intGetter(a)
	if a.Type == Uint64 {
		s := MustAs[uint64](a)
		return func(i int) uint64 { return s[i] }
	}
	return func(i int) uint64 { return uint64(g(i)) }
}

func uintSetter(a Array) func(int, uint64) {
	if a.Type == Uint64 {
		s := MustAs[uint64](a)
		return func(i int, v uint64) { s[i] = v }
	}
	set := intSetter(a)
	return func(i int, v uint64) { set(i, int64(v)) }
}

// Float64s returns a's elements as float64s (a copy), for tests and
// reports.
func Float64s(a Array) []float64 {
	if a.Type == String || !a.Type.Supported() {
		return nil
	}
	get := floatGetter(a)
	out := make([]float64, a.Len())
	for i := range out {
		out[i] = get(i)
	}
	return out
}

// Int64s returns the elements of an integer or Bool array as int64s (a
// copy): shape inputs, indices.
func Int64s(a Array) ([]int64, error) {
	switch {
	case a.Type == Bool:
		s := MustAs[bool](a)
		out := make([]int64, len(s))
		for i, b := range s {
			if b {
				out[i] = 1
			}
		}
		return out, nil
	case a.Type.IsInt():
		get := intGetter(a)
		out := make([]int64, a.Len())
		for i := range out {
			out[i] = get(i)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %v array holds no integers", a.Type)
}
