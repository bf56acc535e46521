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
	if len(c.shape) == 0 { // one element
		copy(dst[c.dstOff*size:(c.dstOff+1)*size], src[c.srcOff*size:(c.srcOff+1)*size])
		return
	}
	k := len(c.shape) - 1
	if c.dstSt[k] == 1 && c.srcSt[k] == 1 && c.shape[k]*size >= minRunBytes {
		copyRuns(dst, src, size, c)
		return
	}
	switch size {
	case 1:
		copyElems(words[uint8](dst), words[uint8](src), c)
	case 2:
		copyElems(words[uint16](dst), words[uint16](src), c)
	case 4:
		copyElems(words[uint32](dst), words[uint32](src), c)
	default:
		copyElems(words[uint64](dst), words[uint64](src), c)
	}
}

// copyRuns copies c, whose innermost dimension is contiguous on both
// sides, one run at a time.
func copyRuns(dst, src []byte, size int, c strided) {
	k := len(c.shape) - 1
	run := c.shape[k] * size
	outer := strided{shape: c.shape[:k], dstSt: c.dstSt[:k], srcSt: c.srcSt[:k], dstOff: c.dstOff, srcOff: c.srcOff}
	parallel.For(numel(outer.shape), c.shape[k], func(lo, hi int) {
		outer.rows(lo, hi, func(d, s int) {
			copy(dst[d*size:d*size+run], src[s*size:s*size+run])
		})
	})
}

// transposeTile is the side, in elements, of the tiles of a transpose: a
// tile of both arrays stays in the L1 cache.
const transposeTile = 32

// copyElems copies c element by element along the innermost dimension,
// or in tiles when c transposes.
func copyElems[E word](dst, src []E, c strided) {
	k := len(c.shape) - 1
	// A transpose: the output's innermost dimension is strided in the
	// source and another dimension is the source's contiguous one.
	if c.dstSt[k] == 1 && c.srcSt[k] != 1 && c.srcSt[k] != 0 {
		for a := k - 1; a >= 0; a-- {
			if c.srcSt[a] == 1 {
				transposeTiles(dst, src, c, a)
				return
			}
		}
	}
	n, dk, sk := c.shape[k], c.dstSt[k], c.srcSt[k]
	outer := strided{shape: c.shape[:k], dstSt: c.dstSt[:k], srcSt: c.srcSt[:k], dstOff: c.dstOff, srcOff: c.srcOff}
	parallel.For(numel(outer.shape), n, func(lo, hi int) {
		outer.rows(lo, hi, func(d, s int) {
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
	})
}

// transposeTiles copies c, whose innermost dimension k is contiguous in
// dst and dimension a contiguous in src, in tiles of a × k.
func transposeTiles[E word](dst, src []E, c strided, a int) {
	k := len(c.shape) - 1
	na, nb := c.shape[a], c.shape[k]
	da, sb := c.dstSt[a], c.srcSt[k]
	// The tile: transposeTile² elements, longer along a when k is short
	// (NCHW to NHWC: 3 channels, thousands of pixels).
	tb := min(nb, transposeTile)
	ta := transposeTile * transposeTile / tb
	var outer strided
	for i := range k {
		if i != a {
			outer.shape = append(outer.shape, c.shape[i])
			outer.dstSt = append(outer.dstSt, c.dstSt[i])
			outer.srcSt = append(outer.srcSt, c.srcSt[i])
		}
	}
	outer.dstOff, outer.srcOff = c.dstOff, c.srcOff
	tilesA := (na + ta - 1) / ta
	parallel.For(numel(outer.shape)*tilesA, ta*nb, func(lo, hi int) {
		// Items are (outer row, tile of a), row-major.
		row := lo / tilesA
		outer.rows(row, (hi+tilesA-1)/tilesA, func(d, s int) {
			t0, t1 := max(0, lo-row*tilesA), min(tilesA, hi-row*tilesA)
			row++
			for t := t0; t < t1; t++ {
				a0, a1 := t*ta, min(na, (t+1)*ta)
				for b0 := 0; b0 < nb; b0 += tb {
					b1 := min(nb, b0+tb)
					for b := b0; b < b1; b++ {
						dp := d + b + a0*da
						line := src[s+b*sb+a0 : s+b*sb+a1]
						for _, v := range line {
							dst[dp] = v
							dp += da
						}
					}
				}
			}
		})
	})
}

// rows calls fn with the offsets of the block's elements (index in
// row-major order) lo to hi-1.
func (c strided) rows(lo, hi int, fn func(d, s int)) {
	if lo >= hi {
		return
	}
	k := len(c.shape)
	idx := make([]int, k)
	d, s := c.dstOff, c.srcOff
	for i, r := k-1, lo; i >= 0; i-- {
		idx[i] = r % c.shape[i]
		r /= c.shape[i]
		d += idx[i] * c.dstSt[i]
		s += idx[i] * c.srcSt[i]
	}
	for r := lo; r < hi; r++ {
		fn(d, s)
		for i := k - 1; i >= 0; i-- {
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
