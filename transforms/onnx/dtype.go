package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The element types of the operators' loops, and the one place where an
// array's element type (an nd.DType) becomes a Go type.
//
// An operator's loop is a generic function of its element type T,
// constrained by one of the families below. Its Run reaches the loop's
// instantiation for an array's type through the family's dispatch:
// floating, integer or numeric returns, for a type of the family, a value
// that stands for the type (floats[T], ints[T] or numbers[T, W]: no data,
// only methods) as an interface that the operator declares. The operator
// writes that interface's methods on the generic type in its own file,
// each calling its loop instantiated for T:
//
//	type softmaxLoop interface {
//		softmax(x, y nd.Array, outer, n, inner int, log bool)
//	}
//
//	func (floats[T]) softmax(x, y nd.Array, outer, n, inner int, log bool) {
//		softmax(nd.MustAs[T](x), nd.MustAs[T](y), outer, n, inner, log)
//	}
//
// and its Run calls floating[softmaxLoop](k.name, x.Type), then the
// method. So a Run dispatches once (one interface call, none per element),
// a type outside the family is the one error "<op> is not supported for
// <type>", and an element type is added in one place, here.
//
// The interface must be one that the family's type implements: asking
// floating for a method written on numbers is a programming error, and
// panics the first time the operator runs.

// The families.
type (
	floatElem    interface{ float32 | float64 }
	signedElem   interface{ int8 | int16 | int32 | int64 }
	unsignedElem interface {
		uint8 | uint16 | uint32 | uint64
	}
	intElem interface{ signedElem | unsignedElem }
	numElem interface{ floatElem | intElem }
	// wideElem is the widest type of each kind, which holds every value of
	// the kind's types.
	wideElem interface{ float64 | int64 | uint64 }
)

// floats[T], ints[T] and numbers[T, W] stand for the element type T. W is
// the widest type of T's kind (float64, int64 or uint64): the type sums of
// T are computed in.
type (
	floats[T floatElem]            struct{}
	ints[T intElem]                struct{}
	numbers[T numElem, W wideElem] struct{}
)

// floating returns floats[T] for t, a float type, as I.
func floating[I any](op string, t nd.DType) (I, error) {
	var e any
	switch t {
	case nd.Float32:
		e = floats[float32]{}
	case nd.Float64:
		e = floats[float64]{}
	default:
		return unsupported[I](op, t)
	}
	return e.(I), nil
}

// integer returns ints[T] for t, an integer type, as I.
func integer[I any](op string, t nd.DType) (I, error) {
	var e any
	switch t {
	case nd.Int8:
		e = ints[int8]{}
	case nd.Int16:
		e = ints[int16]{}
	case nd.Int32:
		e = ints[int32]{}
	case nd.Int64:
		e = ints[int64]{}
	case nd.Uint8:
		e = ints[uint8]{}
	case nd.Uint16:
		e = ints[uint16]{}
	case nd.Uint32:
		e = ints[uint32]{}
	case nd.Uint64:
		e = ints[uint64]{}
	default:
		return unsupported[I](op, t)
	}
	return e.(I), nil
}

// numeric returns numbers[T, W] for t, a float or integer type, as I.
func numeric[I any](op string, t nd.DType) (I, error) {
	var e any
	switch t {
	case nd.Float32:
		e = numbers[float32, float64]{}
	case nd.Float64:
		e = numbers[float64, float64]{}
	case nd.Int8:
		e = numbers[int8, int64]{}
	case nd.Int16:
		e = numbers[int16, int64]{}
	case nd.Int32:
		e = numbers[int32, int64]{}
	case nd.Int64:
		e = numbers[int64, int64]{}
	case nd.Uint8:
		e = numbers[uint8, uint64]{}
	case nd.Uint16:
		e = numbers[uint16, uint64]{}
	case nd.Uint32:
		e = numbers[uint32, uint64]{}
	case nd.Uint64:
		e = numbers[uint64, uint64]{}
	default:
		return unsupported[I](op, t)
	}
	return e.(I), nil
}

func unsupported[I any](op string, t nd.DType) (I, error) {
	var zero I
	return zero, notSupported(op, t)
}

// notSupported is the error of an operator for an element type it does not
// take: the dispatch's, and an operator's that takes only some of a
// family's types.
func notSupported(op string, t nd.DType) error {
	return fmt.Errorf("%s is not supported for %v", op, t)
}

// isNumeric reports whether t is an integer or float type (not Bool).
func isNumeric(t nd.DType) bool { return t.IsInt() || t.IsFloat() }

// isFloat reports whether T is a float type.
func isFloat[T numElem]() bool { return nd.TypeOf[T]().IsFloat() }
