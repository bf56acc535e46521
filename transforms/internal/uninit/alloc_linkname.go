//go:build !purego

package uninit

import "unsafe"

// mallocgc allocates size bytes; with a nil type the memory holds no
// pointers, with needzero false it is not cleared.
//
//go:linkname mallocgc runtime.mallocgc
func mallocgc(size uintptr, typ unsafe.Pointer, needzero bool) unsafe.Pointer

// Slice returns a slice of n elements (len and cap n) whose contents are
// undefined: whatever the memory held before. The caller must write every
// element before reading any. It panics as make does for a negative n.
func Slice[T Number](n int) []T {
	var zero T
	size := unsafe.Sizeof(zero)
	if n <= 0 || uintptr(n) > maxBytes/size {
		return make([]T, n) // make's panic for a negative n, its error for a huge one
	}
	return unsafe.Slice((*T)(mallocgc(uintptr(n)*size, nil, false)), n)
}

// maxBytes bounds the sizes Slice allocates itself (1 TiB; 1 GiB on 32-bit
// machines): larger ones go to make, which reports those it cannot allocate.
const maxBytes = 1 << (30 + 10*(^uintptr(0)>>63))
