package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// Parts is a value as it crosses a process boundary: a small header (the
// metadata, encoded with the Append functions) and its bulk arrays, raw
// little-endian. Kept apart, the arrays move without being re-encoded: to
// the GPU executor each goes in a shared-memory buffer of its own, which the
// executor views and copies to the device in place; in a Beam coder they
// follow the header, aligned, and decode as views of the element's bytes.
type Parts struct {
	Header []byte
	Arrays [][]byte
}

// Size is the number of bytes of the header and the arrays.
func (p Parts) Size() int {
	n := len(p.Header)
	for _, a := range p.Arrays {
		n += len(a)
	}
	return n
}

// Array views p as its little-endian bytes: p's own memory on a
// little-endian host (no copy), a converted copy elsewhere.
func Array[T Number](p []T) []byte {
	if len(p) == 0 {
		return nil
	}
	if nativeLE {
		return unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), len(p)*size[T]())
	}
	b, _ := binary.Append(nil, le, p)
	return b
}

// View returns the n elements of type T that b holds (len(b) must be n
// times T's size): b's own memory when the host is little-endian and b is
// aligned for T (no copy), else a converted copy. what names the array in
// the error.
func View[T Number](b []byte, n int, what string) ([]T, error) {
	sz := size[T]()
	if n < 0 || n > math.MaxInt/sz || len(b) != n*sz {
		return nil, fmt.Errorf("%s: %d bytes, want %d elements of %d bytes", what, len(b), n, sz)
	}
	if n == 0 {
		return []T{}, nil
	}
	if nativeLE && uintptr(unsafe.Pointer(&b[0]))%uintptr(sz) == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n), nil
	}
	p := make([]T, n)
	if nativeLE {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), len(b)), b)
	} else {
		_, _ = binary.Decode(b, le, p)
	}
	return p, nil
}

// arrayAlign is where AppendParts starts each array, relative to the start
// of the buffer: enough for any Number, so that the arrays of an encoding in
// a Go allocation (8-byte aligned or better) decode as views.
const arrayAlign = 8

// AppendParts appends p to b (which must start an allocation: the arrays are
// aligned relative to b's start): the header and the number of arrays, each
// array's length, then each array at an aligned offset.
func AppendParts(b []byte, p Parts) []byte {
	b = AppendBytes(b, p.Header)
	b = AppendUvarint(b, len(p.Arrays))
	for _, a := range p.Arrays {
		b = AppendUvarint(b, len(a))
	}
	for _, a := range p.Arrays {
		b = append(b, make([]byte, pad(len(b)))...)
		b = append(b, a...)
	}
	return b
}

func pad(n int) int { return (arrayAlign - n%arrayAlign) % arrayAlign }

// PartsSize is len(AppendParts(nil, p)), without building it.
func PartsSize(p Parts) int {
	n := len(AppendUvarint(nil, len(p.Header))) + len(p.Header) + len(AppendUvarint(nil, len(p.Arrays)))
	for _, a := range p.Arrays {
		n += len(AppendUvarint(nil, len(a)))
	}
	for _, a := range p.Arrays {
		n += pad(n) + len(a)
	}
	return n
}

// ReadParts reads what AppendParts wrote, as views of data (which must be
// the whole buffer AppendParts wrote into, for the alignment).
func ReadParts(data []byte, what string) (Parts, error) {
	d := NewDecoder(data, what)
	var p Parts
	p.Header = d.LenBytes()
	n := d.Uvarint()
	if d.Err() == nil && n > len(data) {
		d.Fail("%d arrays in %d bytes", n, len(data))
	}
	lens := make([]int, 0, min(n, 64))
	for i := 0; i < n && d.Err() == nil; i++ {
		lens = append(lens, d.Uvarint())
	}
	for _, l := range lens {
		d.Bytes(pad(len(data) - len(d.b)))
		p.Arrays = append(p.Arrays, d.Bytes(l))
	}
	if err := d.Done(); err != nil {
		return Parts{}, err
	}
	return p, nil
}

// Join encodes p as one buffer (AppendParts into a new allocation): a Beam
// coder's encoding of a value whose codec gives Parts.
func Join(p Parts) []byte { return AppendParts(make([]byte, 0, PartsSize(p)), p) }
