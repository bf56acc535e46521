// Package wire holds the encoding the steps' coders and codecs share.
//
// Their Beam coders and their GPU executor codecs alike append and read
// numeric planes as raw little-endian arrays (a memmove on little-endian
// hosts), lengths as uvarints, and decode with a decoder that turns every
// malformed input into an error instead of a panic.
package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// Number is an element type a plane may hold.
type Number interface {
	~uint8 | ~uint16 | ~int32 | ~float32
}

var (
	le       = binary.LittleEndian
	nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
)

func size[T Number]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// AppendPlane appends p as a little-endian array (no length).
func AppendPlane[T Number](b []byte, p []T) []byte {
	if len(p) == 0 {
		return b
	}
	if nativeLE {
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), len(p)*size[T]())...)
	}
	b, _ = binary.Append(b, le, p)
	return b
}

// AppendUvarint appends a length or count.
func AppendUvarint(b []byte, v int) []byte { return binary.AppendUvarint(b, uint64(v)) }

// AppendUint64 appends a uvarint of any size.
func AppendUint64(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendString appends a length-prefixed string.
func AppendString(b []byte, s string) []byte { return append(AppendUvarint(b, len(s)), s...) }

// AppendBytes appends a length-prefixed byte slice.
func AppendBytes(b, p []byte) []byte { return append(AppendUvarint(b, len(p)), p...) }

// AppendFloat64 appends a float64.
func AppendFloat64(b []byte, v float64) []byte { return le.AppendUint64(b, math.Float64bits(v)) }

// Decoder reads what the Append functions wrote. After the first error every
// read returns zero values; Err reports it.
type Decoder struct {
	b    []byte
	err  error
	what string
}

// NewDecoder returns a decoder of data; what names the type in errors.
func NewDecoder(data []byte, what string) *Decoder { return &Decoder{b: data, what: what} }

// Fail records an error (the first one wins).
func (d *Decoder) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(d.what+" coder: "+format, args...)
	}
}

// Remaining is the number of bytes not read yet.
func (d *Decoder) Remaining() int { return len(d.b) }

// Err is the first error met.
func (d *Decoder) Err() error { return d.err }

// Done returns the first error, or an error if bytes are left over.
func (d *Decoder) Done() error {
	if d.err == nil && len(d.b) != 0 {
		d.Fail("%d trailing bytes", len(d.b))
	}
	return d.err
}

// Uvarint reads a length or count of at most math.MaxInt32.
func (d *Decoder) Uvarint() int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > math.MaxInt32 {
		d.Fail("bad length")
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

// Uint64 reads a uvarint of any size (AppendUint64's).
func (d *Decoder) Uint64() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.Fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Bytes reads n bytes (a view of the input).
func (d *Decoder) Bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.Fail("truncated: need %d bytes, have %d", n, len(d.b))
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

// String reads a length-prefixed string.
func (d *Decoder) String() string { return string(d.Bytes(d.Uvarint())) }

// LenBytes reads a length-prefixed byte slice (a view of the input).
func (d *Decoder) LenBytes() []byte { return d.Bytes(d.Uvarint()) }

// Float64 reads a float64.
func (d *Decoder) Float64() float64 {
	b := d.Bytes(8)
	if d.err != nil {
		return 0
	}
	return math.Float64frombits(le.Uint64(b))
}

// Plane reads n elements of a plane written by AppendPlane.
func Plane[T Number](d *Decoder, n int) []T {
	if n < 0 || n > math.MaxInt32/size[T]() {
		d.Fail("plane of %d elements", n)
		return nil
	}
	raw := d.Bytes(n * size[T]())
	if d.err != nil {
		return nil
	}
	p := make([]T, n)
	if n == 0 {
		return p
	}
	if nativeLE {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), len(raw)), raw)
	} else {
		_, _ = binary.Decode(raw, le, p)
	}
	return p
}
