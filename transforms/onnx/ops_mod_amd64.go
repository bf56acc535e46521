//go:build !purego

package onnx

import (
	"math"
	"unsafe"
)

// fmodAVX2 is fmodVec's kernel (ops_mod_amd64.s).
//
//go:noescape
func fmodAVX2(z, x, y *float32, n int, tab *[4][4]uint64) int

// fmodTab holds fmodAVX2's constants, 4 copies each: |.|'s mask, the sign
// bit, 2^24 and +Inf, as float64 bits.
var fmodTab = func() (t [4][4]uint64) {
	for i, v := range []uint64{1<<63 - 1, 1 << 63, math.Float64bits(1 << 24), math.Float64bits(math.Inf(1))} {
		for j := range t[i] {
			t[i][j] = v
		}
	}
	return t
}()

// modWidth is the lanes of fmodAVX2 (4 float64s) wherever AVX2 is; a
// variable for the tests.
var modWidth = min(simdWidth, 4)

// fmodVec writes fmod32(x[i], y[i]) to z[i] for a prefix of x in blocks of
// 4 and returns its length (0 without a vector kernel): it stops before the
// first block where fmod32 takes its slower cases. len(y), len(z) >=
// len(x).
func fmodVec(z, x, y []float32) int {
	if modWidth == 0 || len(x) < 4 {
		return 0
	}
	_, _ = y[len(x)-1], z[len(x)-1]
	return fmodAVX2(unsafe.SliceData(z), unsafe.SliceData(x), unsafe.SliceData(y), len(x), &fmodTab)
}
