//go:build !purego

package raster

import (
	"math"
	"unsafe"
)

// levelsVec is a levels table as compositeAVX512 reads it (its layout is
// fixed in composite_amd64.s): per bucket one uint64, next's float32 bits
// in the low half and base in the high half, so one gather element brings
// both.
type levelsVec struct {
	lo, h, scale float32
	_            float32
	bucket       [levelBuckets]uint64
}

//go:noescape
func compositeAVX512(pix *uint8, red, green, blue *float32, n int, tabs *[3]*levelsVec)

// vec returns the table's levelsVec, or nil if it has buckets with several
// thresholds (the vector kernel counts one at most).
func (t *levels) vec() *levelsVec {
	t.vecOnce.Do(func() {
		for _, m := range t.multi {
			if m {
				return
			}
		}
		v := &levelsVec{lo: t.lo, h: t.h, scale: t.scale}
		for i := range v.bucket {
			v.bucket[i] = uint64(t.base[i])<<32 | uint64(math.Float32bits(t.next[i]))
		}
		t.vecTab = v
	})
	return t.vecTab
}

// compositeVector writes the first pixels with the AVX-512 kernel and
// returns how many (a multiple of 16; 0 without AVX-512 or with a table it
// cannot take).
func compositeVector(pix []uint8, r, g, b []float32, tabs [3]*levels) int {
	if simd < 16 {
		return 0
	}
	var vt [3]*levelsVec
	for c, t := range tabs {
		if vt[c] = t.vec(); vt[c] == nil {
			return 0
		}
	}
	n := min(len(r), len(g), len(b), len(pix)/4) &^ 15
	if n == 0 {
		return 0
	}
	compositeAVX512(unsafe.SliceData(pix), unsafe.SliceData(r), unsafe.SliceData(g), unsafe.SliceData(b), n, &vt)
	return n
}
