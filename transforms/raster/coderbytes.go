package raster

import (
	"encoding/binary"
	"unsafe"
)

// The coders' planes are little-endian arrays. On a little-endian host that
// is their layout in memory, so they are copied as bytes; elsewhere
// encoding/binary converts them.
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func appendPlane[T uint16 | float32](b []byte, p []T) []byte {
	if len(p) == 0 {
		return b
	}
	if nativeLE {
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), len(p)*int(unsafe.Sizeof(p[0])))...)
	}
	b, _ = binary.Append(b, le, p)
	return b
}

// decodePlane fills p from raw, which holds exactly len(p) elements.
func decodePlane[T uint16 | float32](p []T, raw []byte) {
	if len(p) == 0 {
		return
	}
	if nativeLE {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), len(raw)), raw)
		return
	}
	_, _ = binary.Decode(raw, le, p)
}
