// Package uninit allocates slices of numbers without zeroing them.
//
// It is for outputs that their code overwrites in full before anything
// reads them.
//
// make zeroes what it allocates; for a step that then writes every element
// (a raster plane, say) that is a second pass over the memory, as long as
// the step's own. Slice skips it by calling the runtime's allocator,
// runtime.mallocgc, with needzero false: a linkname to a function the Go
// team keeps, signature included, for the packages that use it
// (go.dev/issue/67401; runtime/malloc.go lists them). It is still the
// runtime's internals, and a linkname is not type-checked: were a Go
// release to change the function, this package's tests would crash, not
// the build fail. The purego build tag turns Slice into make.
//
// The memory is the garbage collector's like any other: freed when
// unreachable. Only types without pointers are allowed (Number), so the
// collector never reads the old contents as pointers; a caller must still
// write every element before it reads one, or it reads stale data.
package uninit

// Number is the element types Slice allocates: numbers, which hold no
// pointers.
type Number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int |
		~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint | ~uintptr |
		~float32 | ~float64
}
