package shm

// Align is the alignment of every region the Allocator hands out: a cache
// line, and enough for any element type a kernel reads (float64, complex128).
const Align = 64

// AlignUp rounds n up to a multiple of Align.
func AlignUp(n int64) int64 { return (n + Align - 1) &^ (Align - 1) }

// Region is a part of an arena: [Off, Off+Len).
type Region struct {
	Off, Len int64
}

// End is the offset just past the region.
func (r Region) End() int64 { return r.Off + r.Len }

// Allocator hands out aligned, non-overlapping regions of [Base, Base+Size)
// one after the other (a bump allocator: a batch's buffers all live until
// the batch is done, and Reset frees them all at once). Not safe for
// concurrent use.
type Allocator struct {
	Base, Size int64
	used       int64
}

// NewAllocator returns an allocator over [base, base+size).
func NewAllocator(base, size int64) *Allocator { return &Allocator{Base: base, Size: size} }

// Alloc returns a region of n bytes, or ok=false when it does not fit (or n
// is negative). A zero-length region is allowed.
func (a *Allocator) Alloc(n int64) (r Region, ok bool) {
	start := AlignUp(a.used)
	if n < 0 || start > a.Size || n > a.Size-start {
		return Region{}, false
	}
	a.used = start + n
	return Region{Off: a.Base + start, Len: n}, true
}

// Used is the bytes handed out so far, with alignment padding: the space a
// further allocation starts after.
func (a *Allocator) Used() int64 { return a.used }

// Need is the space an allocator needs to hand out regions of the given
// sizes after what it has handed out already.
func (a *Allocator) Need(sizes ...int64) int64 {
	n := a.used
	for _, s := range sizes {
		n = AlignUp(n) + s
	}
	return n
}

// Reset frees every region.
func (a *Allocator) Reset() { a.used = 0 }
