package onnx

import (
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
)

// Strided copies: the engine under the data-movement operators
// (Transpose, Slice, Split, Concat, Gather, Pad, Expand). A copy is a block
// of elements read from one array and written to another at element
// strides; it is simplified (dimensions of 1 dropped, dimensions that are
// contiguous in both arrays merged) and then run as the fastest of three
// loops, on all cores through parallel.For:
//
//   - contiguous runs (the innermost dimension contiguous on both sides):
//     one copy per run;
//   - a transpose (the innermost output dimension strided in the source,
//     another dimension contiguous there): 2-D tiles, so that both sides
//     stay in cache;
//   - anything else (steps, broadcasting, reversal): a typed element loop
//     along the innermost dimension.
//
// Elements move as unsigned words of their size (1, 2, 4 or 8 bytes), so
// the engine serves every element type without knowing it.

// strided is a copy of a block of shape: the element at index (i0..ik) is
// read at src[srcOff + Σ ij·srcSt[j]] and written at dst[dstOff + Σ
// ij·dstSt[j]] (in elements). Strides may be 0 (broadcasting) or negative
// (reversal).
type strided struct {
	shape          []int
	dstSt, srcSt   []int
	dstOff, srcOff int
}

// simplify drops dimensions of size 1 and merges each dimension with the
// next where both arrays step over it as over one longer dimension. ok is
// false when the block is empty.
func (c strided) simplify() (strided, bool) {
	out := strided{dstOff: c.dstOff, srcOff: c.srcOff}
	for i := len(c.shape) - 1; i >= 0; i-- {
		n := c.shape[i]
		switch {
		case n == 0:
			return out, false
		case n == 1:
			continue
		}
		if k := len(out.shape) - 1; k >= 0 && c.dstSt[i] == out.dstSt[k]*out.shape[k] && c.srcSt[i] == out.srcSt[k]*out.shape[k] {
			out.shape[k] *= n
			continue
		}
		out.shape = append(out.shape, n)
		out.dstSt = append(out.dstSt, c.dstSt[i])
		out.srcSt = append(out.srcSt, c.srcSt[i])
	}
	reverse(out.shape)
	reverse(out.dstSt)
	reverse(out.srcSt)
	return out, true
}

func reverse(s []int) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// word is how the engine moves an element: an unsigned integer of its size.
type word interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// words views b as a slice of E (b's length a multiple of E's size, its
// data aligned for E, as the runtime's arrays are).
func words[E word](b []byte) []E {
	var z E
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*E)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// minRunBytes is the run below which a copy call costs more than a typed
// loop.
const minRunBytes = 64

// copyStrided runs c on arrays of elements of size bytes.
func copyStrided(dst, src []byte, size int, c strided) {
	c, ok := c.simplify()
	if !ok {
		return
	}
	runStrided(dst, src, size, c)
}

// runStrided runs c, simplified, on arrays of elements of size bytes. It
// allocates nothing (a kernel that keeps its simplified copy, a
// stridedPlans, copies without allocating).
func runStrided(dst, src []byte, size int, c strided) {
	if len(c.shape) == 0 { // one element
		copy(dst[c.dstOff*size:(c.dstOff+1)*size], src[c.srcOff*size:(c.srcOff+1)*size])
		return
	}
	k := len(c.shape) - 1
	if c.dstSt[k] == 1 && c.srcSt[k] == 1 && c.shape[k]*size >= minRunBytes {
		copyRuns(dst, src, size, c)
		return
	}
	// A transpose: the output's innermost dimension is strided in the
	// source and another dimension is the source's contiguous one.
	a := -1
	if c.dstSt[k] == 1 && c.srcSt[k] != 1 && c.srcSt[k] != 0 {
		for d := k - 1; d >= 0; d-- {
			if c.srcSt[d] == 1 {
				a = d
				break
			}
		}
	}
	args := elemsArgs{dst: dst, src: src, c: c}
	if a >= 0 {
		// The tile: transposeTile² elements, longer along a when k is
		// short (NCHW to NHWC: 3 channels, thousands of pixels).
		args.a = a
		args.tb = min(c.shape[k], transposeTile)
		args.ta = transposeTile * transposeTile / args.tb
		args.tilesA = (c.shape[a] + args.ta - 1) / args.ta
		rows := 1
		for i := range k {
			if i != a {
				rows *= c.shape[i]
			}
		}
		switch size { // the functions instantiated here, not in generic code: no closure to allocate
		case 1:
			parallel.ForWith(rows*args.tilesA, args.ta*c.shape[k], args, transposeTiles[uint8])
		case 2:
			parallel.ForWith(rows*args.tilesA, args.ta*c.shape[k], args, transposeTiles[uint16])
		case 4:
			parallel.ForWith(rows*args.tilesA, args.ta*c.shape[k], args, transposeTiles[uint32])
		default:
			parallel.ForWith(rows*args.tilesA, args.ta*c.shape[k], args, transposeTiles[uint64])
		}
		return
	}
	n, outer := c.shape[k], numel(c.shape[:k])
	switch size {
	case 1:
		parallel.ForWith(outer, n, args, copyElems[uint8])
	case 2:
		parallel.ForWith(outer, n, args, copyElems[uint16])
	case 4:
		parallel.ForWith(outer, n, args, copyElems[uint32])
	default:
		parallel.ForWith(outer, n, args, copyElems[uint64])
	}
}

// copyRuns copies c, whose innermost dimension is contiguous on both
// sides, one run at a time.
func copyRuns(dst, src []byte, size int, c strided) {
	k := len(c.shape) - 1
	parallel.ForWith(numel(c.shape[:k]), c.shape[k], elemsArgs{dst: dst, src: src, c: c, size: size}, func(e *elemsArgs, lo, hi int) {
		c := e.c
		k := len(c.shape) - 1
		run := c.shape[k] * e.size
		c.rows(lo, hi, k, -1, func(d, s int) {
			copy(e.dst[d*e.size:d*e.size+run], e.src[s*e.size:s*e.size+run])
		})
	})
}

// elemsArgs are a strided copy's, for its loops: c simplified, the bytes,
// and for transposeTiles the axis a contiguous in src and the tiles.
type elemsArgs struct {
	dst, src          []byte
	c                 strided
	size              int
	a, ta, tb, tilesA int
}

// transposeTile is the side, in elements, of the tiles of a transpose: a
// tile of both arrays stays in the L1 cache.
const transposeTile = 32

// copyElems copies rows lo..hi of e.c (its dimensions but the innermost)
// element by element along the innermost dimension.
func copyElems[E word](e *elemsArgs, lo, hi int) {
	dst, src, c := words[E](e.dst), words[E](e.src), e.c
	k := len(c.shape) - 1
	n, dk, sk := c.shape[k], c.dstSt[k], c.srcSt[k]
	c.rows(lo, hi, k, -1, func(d, s int) {
		switch {
		case dk == 1 && sk == 1:
			copy(dst[d:d+n], src[s:s+n])
		case dk == 1 && sk == 0:
			fillWords(dst[d:d+n], src[s])
		case dk == 1:
			row := dst[d : d+n]
			for i := range row {
				row[i] = src[s]
				s += sk
			}
		default:
			for range n {
				dst[d] = src[s]
				d += dk
				s += sk
			}
		}
	})
}

// transposeTiles copies items lo..hi of e.c, whose innermost dimension k
// is contiguous in dst and dimension e.a contiguous in src, in tiles of a
// × k: an item is (a row of the dimensions but a and k, a tile of a),
// row-major. Of 4-byte elements, a tile's whole 16 x 16 blocks move
// through the vector registers where there is a kernel (transpose16, the
// blocked convolution's), the rest element by element.
func transposeTiles[E word](e *elemsArgs, lo, hi int) {
	dst, src, c, a := words[E](e.dst), words[E](e.src), e.c, e.a
	var z E
	var dst32, src32 []float32 // the arrays for transpose16, bits moved as they are
	if unsafe.Sizeof(z) == 4 && nchwcWidth != 0 {
		dst32, src32 = floatWords(e.dst), floatWords(e.src)
	}
	k := len(c.shape) - 1
	na, nb := c.shape[a], c.shape[k]
	da, sb := c.dstSt[a], c.srcSt[k]
	ta, tb, tilesA := e.ta, e.tb, e.tilesA
	row := lo / tilesA
	c.rows(row, (hi+tilesA-1)/tilesA, k, a, func(d, s int) {
		t0, t1 := max(0, lo-row*tilesA), min(tilesA, hi-row*tilesA)
		row++
		for t := t0; t < t1; t++ {
			a0, a1 := t*ta, min(na, (t+1)*ta)
			a16 := a0 // the blocks' end along a
			if dst32 != nil {
				a16 += (a1 - a0) &^ 15
			}
			for b0 := 0; b0 < nb; b0 += tb {
				b1 := min(nb, b0+tb)
				b16 := b0
				if dst32 != nil {
					b16 += (b1 - b0) &^ 15
				}
				for b := b0; b < b16; b += 16 {
					for i := a0; i < a16; i += 16 {
						transpose16(dst32[d+b+i*da:], da, src32[s+b*sb+i:], sb)
					}
				}
				for b := b0; b < b1; b++ {
					from := a0 // the values the blocks left
					if b < b16 {
						from = a16
					}
					dp := d + b + from*da
					for _, v := range src[s+b*sb+from : s+b*sb+a1] {
						dst[dp] = v
						dp += da
					}
				}
			}
		}
	})
}

// floatWords views b as float32s, bits moved as they are (transpose16's
// shuffles keep every bit, NaN payloads included).
func floatWords(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// rows calls fn with the offsets of the elements lo to hi-1 (row-major
// order) of the block of c's first k dimensions but skip (-1: none). The
// offsets start at c's; fn does not escape, so that a closure passed here
// stays on its caller's stack.
func (c strided) rows(lo, hi, k, skip int, fn func(d, s int)) {
	if lo >= hi {
		return
	}
	var stack [8]int
	idx := stack[:0]
	if k > len(stack) {
		idx = make([]int, k)
	}
	idx = idx[:k]
	d, s := c.dstOff, c.srcOff
	for i, r := k-1, lo; i >= 0; i-- {
		if i == skip {
			continue
		}
		idx[i] = r % c.shape[i]
		r /= c.shape[i]
		d += idx[i] * c.dstSt[i]
		s += idx[i] * c.srcSt[i]
	}
	for r := lo; r < hi; r++ {
		fn(d, s)
		for i := k - 1; i >= 0; i-- {
			if i == skip {
				continue
			}
			idx[i]++
			d += c.dstSt[i]
			s += c.srcSt[i]
			if idx[i] < c.shape[i] {
				break
			}
			d -= idx[i] * c.dstSt[i]
			s -= idx[i] * c.srcSt[i]
			idx[i] = 0
		}
	}
}

// fillWords sets every element of dst to v.
func fillWords[E word](dst []E, v E) {
	for i := range dst {
		dst[i] = v
	}
}

// fillCopies sets every element of dst to v by doubling what is written
// (copy is vectorized; a loop storing v is not): for rows of more than a
// few dozen values.
func fillCopies[T any](dst []T, v T) {
	if len(dst) == 0 {
		return
	}
	dst[0] = v
	for n := 1; n < len(dst); {
		n += copy(dst[n:], dst[:n])
	}
}

// fillBytes fills dst with copies of the element elem (len(dst) a multiple
// of len(elem)), doubling what is written: a few copies, whatever the size.
func fillBytes(dst, elem []byte) {
	if len(dst) == 0 {
		return
	}
	allZero := true
	for _, b := range elem {
		allZero = allZero && b == 0
	}
	if allZero {
		clear(dst)
		return
	}
	n := copy(dst, elem)
	for n < len(dst) {
		n += copy(dst[n:], dst[:n])
	}
}

// fillParallel is fillBytes on all cores for large arrays.
func fillParallel(dst, elem []byte) {
	size := len(elem)
	const chunk = 1 << 16
	n := len(dst) / size
	parallel.For((n+chunk-1)/chunk, chunk, func(lo, hi int) {
		fillBytes(dst[lo*chunk*size:min(n, hi*chunk)*size], elem)
	})
}
