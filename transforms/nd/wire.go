package nd

import (
	"unsafe"

	"github.com/beamgpu/beamgpu/transforms/wire"
)

// Arrays across process boundaries (the GPU executor's shared memory, Beam's
// coders) go as wire.Parts: each array's type and shape in the header
// (AppendMeta), its bytes as one of the raw arrays, moved without being
// re-encoded, and viewed in place on the other side (View).

// AppendMeta appends a's type and shape to a header.
func AppendMeta(h []byte, a Array) []byte {
	h = append(h, byte(a.Type))
	h = wire.AppendUvarint(h, len(a.Shape))
	for _, d := range a.Shape {
		h = wire.AppendUvarint(h, d)
	}
	return h
}

// maxRank bounds the rank a header may announce.
const maxRank = 64

// ReadMeta reads what AppendMeta wrote: a type and a shape, checked (a
// supported type, a shape of at most MaxElements elements); errors go to d.
func ReadMeta(d *wire.Decoder) (DType, []int) {
	t := Undefined
	if b := d.Bytes(1); d.Err() == nil {
		t = DType(b[0])
	}
	rank := d.Uvarint()
	if d.Err() == nil && rank > maxRank {
		d.Fail("rank %d", rank)
	}
	var shape []int
	for i := 0; i < rank && d.Err() == nil; i++ {
		shape = append(shape, d.Uvarint())
	}
	if d.Err() != nil {
		return Undefined, nil
	}
	if !t.Supported() {
		d.Fail("element type %v is not supported", t)
		return Undefined, nil
	}
	if shape == nil {
		shape = []int{}
	}
	if _, err := Numel(shape); err != nil {
		d.Fail("%v", err)
		return Undefined, nil
	}
	return t, shape
}

// View returns the array of type t and shape whose elements are data: a
// view of data where it is aligned for t (no copy), else an aligned copy.
// data must hold exactly the shape's elements.
func View(t DType, shape []int, data []byte) (Array, error) {
	a := Array{Type: t, Shape: shape, Data: data}
	if err := a.Validate(); err != nil {
		return Array{}, err
	}
	if len(data) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(data)))%uintptr(t.Size()) != 0 {
		a.Data = Bytes(len(data))
		copy(a.Data, data)
	}
	if a.Data == nil {
		a.Data = []byte{}
	}
	return a, nil
}
