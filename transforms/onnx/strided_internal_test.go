package onnx

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Transposes of 4-byte elements (NCHW to NHWC and back, a matrix's,
// innermost dimensions of 1 to 100, blocks of 16 whole and ragged, tiles
// longer along the source's contiguous axis) move every element where the
// element loop does, at each vector width of transpose16's kernel and in
// Go, every bit kept (NaN payloads included).
func TestTransposeTilesVectorAndGo(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	saved := nchwcWidth
	defer func() { nchwcWidth = saved }()
	cases := []struct {
		shape, perm []int
	}{
		{[]int{2, 96, 14, 14}, []int{0, 2, 3, 1}},
		{[]int{2, 14, 14, 96}, []int{0, 3, 1, 2}},
		{[]int{1, 3, 40, 33}, []int{0, 2, 3, 1}},
		{[]int{33, 17}, []int{1, 0}},
		{[]int{16, 16}, []int{1, 0}},
		{[]int{100, 1, 7}, []int{2, 1, 0}},
		{[]int{5, 64, 48}, []int{0, 2, 1}},
		{[]int{3, 31, 2, 47}, []int{3, 1, 0, 2}},
	}
	for _, tc := range cases {
		n := numel(tc.shape)
		x := make([]uint32, n)
		for i := range x {
			x[i] = r.Uint32() // NaN bit patterns among them
		}
		out := make([]int, len(tc.shape))
		src := make([]int, len(tc.shape))
		st := Strides(tc.shape)
		for i, p := range tc.perm {
			out[i], src[i] = tc.shape[p], st[p]
		}
		c := strided{shape: out, dstSt: Strides(out), srcSt: src}
		want := make([]uint32, n) // by index
		idx := make([]int, len(out))
		for o := range want {
			s := 0
			for a, v := range idx {
				s += v * src[a]
			}
			want[o] = x[s]
			for a := len(idx) - 1; a >= 0; a-- {
				if idx[a]++; idx[a] < out[a] {
					break
				}
				idx[a] = 0
			}
		}
		for _, width := range simdWidths() {
			nchwcWidth = width
			got := make([]uint32, n)
			copyStrided(wordBytes(got), wordBytes(x), 4, c)
			require.Equal(t, want, got, fmt.Sprintf("shape %v perm %v, %d lanes", tc.shape, tc.perm, width))
		}
	}
}

// wordBytes views w's memory as bytes.
func wordBytes(w []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 4*len(w))
}
