package nd

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// Array is an n-dimensional array: Shape's product elements of Type, row
// major, little-endian in Data. A scalar has an empty Shape and one element.
type Array struct {
	Type  DType
	Shape []int
	Data  []byte
}

// MaxElements bounds the elements of one array (2^40): shapes that claim
// more are an error, never an allocation.
const MaxElements = 1 << 40

// ErrTooLarge is wrapped by the errors of shapes above MaxElements.
var ErrTooLarge = errors.New("more elements than an array may hold")

// Numel is the number of elements of shape, checked: dims must be
// non-negative and their product at most MaxElements.
func Numel(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v: negative dimension", shape)
		}
		if d != 0 && n > MaxElements/d {
			return 0, fmt.Errorf("shape %v: %w", shape, ErrTooLarge)
		}
		n *= d
	}
	if n > MaxElements {
		return 0, fmt.Errorf("shape %v: %w", shape, ErrTooLarge)
	}
	return n, nil
}

// Len is the number of elements (Shape's product; Shape is assumed valid).
func (a Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// Rank is len(Shape).
func (a Array) Rank() int { return len(a.Shape) }

// Bytes is len(Data).
func (a Array) Bytes() int { return len(a.Data) }

// Validate checks that the type is supported, the shape valid, and Data
// the right length.
func (a Array) Validate() error {
	if !a.Type.Supported() {
		return fmt.Errorf("element type %v is not supported", a.Type)
	}
	n, err := Numel(a.Shape)
	if err != nil {
		return err
	}
	if len(a.Data) != n*a.Type.Size() {
		return fmt.Errorf("%v %v needs %d bytes, has %d", a.Type, a.Shape, n*a.Type.Size(), len(a.Data))
	}
	return nil
}

func (a Array) String() string {
	return fmt.Sprintf("%v%s", a.Type, ShapeString(a.Shape))
}

// ShapeString formats a shape as [2x3x4] ([] for a scalar).
func ShapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, "x") + "]"
}

// Bytes returns n bytes aligned for every element type, zeroed.
func Bytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

// Zeros returns an array of zeros of type t and shape. It panics on an
// invalid shape or an unsupported type (New returns the error).
func Zeros(t DType, shape ...int) Array {
	a, err := New(t, shape...)
	if err != nil {
		panic("nd.Zeros: " + err.Error())
	}
	return a
}

// New returns an array of zeros of type t and shape, or the error of an
// invalid shape or unsupported type.
func New(t DType, shape ...int) (Array, error) {
	if !t.Supported() {
		return Array{}, fmt.Errorf("element type %v is not supported", t)
	}
	n, err := Numel(shape)
	if err != nil {
		return Array{}, err
	}
	if n > math.MaxInt/t.Size() {
		return Array{}, fmt.Errorf("shape %v: %w", shape, ErrTooLarge)
	}
	return Array{Type: t, Shape: append([]int{}, shape...), Data: Bytes(n * t.Size())}, nil
}

// Of returns an array of s's elements with shape (no copy: Data views s).
// Shape defaults to [len(s)]. It panics if shape does not hold len(s)
// elements.
func Of[T Elem](s []T, shape ...int) Array {
	if shape == nil {
		shape = []int{len(s)}
	}
	n, err := Numel(shape)
	if err != nil || n != len(s) {
		panic(fmt.Sprintf("nd.Of: %d elements for shape %v", len(s), shape))
	}
	a := Array{Type: TypeOf[T](), Shape: append([]int{}, shape...)}
	if len(s) == 0 {
		a.Data = []byte{}
		return a
	}
	var z T
	a.Data = unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
	return a
}

// Scalar returns a rank-0 array holding v.
func Scalar[T Elem](v T) Array { return Of([]T{v}, []int{}...) }

// As views a's elements as a []T, without a copy when Data is aligned for
// T, else as a copy. It fails if T is not a's type or Data's length is not
// Len elements.
func As[T Elem](a Array) ([]T, error) {
	if t := TypeOf[T](); t != a.Type {
		return nil, fmt.Errorf("a %v array viewed as %v", a.Type, t)
	}
	var z T
	size := int(unsafe.Sizeof(z))
	n := a.Len()
	if len(a.Data) != n*size {
		return nil, fmt.Errorf("%v: %d bytes for %d elements", a, len(a.Data), n)
	}
	if n == 0 {
		return []T{}, nil
	}
	if uintptr(unsafe.Pointer(&a.Data[0]))%uintptr(size) != 0 {
		out := make([]T, n)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), len(a.Data)), a.Data)
		return out, nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&a.Data[0])), n), nil
}

// MustAs is As for arrays known to be of type T and aligned (the runtime's
// own buffers); it panics otherwise.
func MustAs[T Elem](a Array) []T {
	s, err := As[T](a)
	if err != nil {
		panic("nd.MustAs: " + err.Error())
	}
	return s
}

// Clone returns a copy of a with its own data (aligned).
func (a Array) Clone() Array {
	c := Array{Type: a.Type, Shape: append([]int{}, a.Shape...), Data: Bytes(len(a.Data))}
	copy(c.Data, a.Data)
	return c
}

// Reshaped returns a view of a with another shape of as many elements.
func (a Array) Reshaped(shape ...int) (Array, error) {
	n, err := Numel(shape)
	if err != nil {
		return Array{}, err
	}
	if n != a.Len() {
		return Array{}, fmt.Errorf("%v cannot be reshaped to %v", a, ShapeString(shape))
	}
	return Array{Type: a.Type, Shape: append([]int{}, shape...), Data: a.Data}, nil
}

// Rows returns rows [lo, hi) along the first axis, as a view.
func (a Array) Rows(lo, hi int) Array {
	if len(a.Shape) == 0 || lo < 0 || hi < lo || hi > a.Shape[0] {
		panic(fmt.Sprintf("nd.Rows: rows [%d, %d) of %v", lo, hi, a))
	}
	row := a.Len() / max(1, a.Shape[0]) * a.Type.Size()
	if a.Shape[0] == 0 {
		row = 0
	}
	shape := append([]int{hi - lo}, a.Shape[1:]...)
	return Array{Type: a.Type, Shape: shape, Data: a.Data[lo*row : hi*row : hi*row]}
}

// Concat joins arrays of one type whose shapes agree but for the first
// axis, along it, into a new array.
func Concat(parts []Array) (Array, error) {
	if len(parts) == 0 {
		return Array{}, errors.New("nothing to concatenate")
	}
	first := parts[0]
	if len(first.Shape) == 0 {
		return Array{}, errors.New("scalars cannot be concatenated")
	}
	rows, size := 0, 0
	for i, p := range parts {
		if p.Type != first.Type || !SameShape(p.Shape[min(1, len(p.Shape)):], first.Shape[1:]) || len(p.Shape) != len(first.Shape) {
			return Array{}, fmt.Errorf("part %d is %v, part 0 %v: only the first axis may differ", i, p, first)
		}
		rows += p.Shape[0]
		size += len(p.Data)
	}
	out := Array{Type: first.Type, Shape: append([]int{rows}, first.Shape[1:]...), Data: Bytes(size)}
	at := 0
	for _, p := range parts {
		at += copy(out.Data[at:], p.Data)
	}
	return out, nil
}

// SameShape reports whether a and b are equal shapes.
func SameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
