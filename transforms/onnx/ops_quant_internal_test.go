package onnx

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// requantRow rounds half to even (ties at 0.5, 1.5, 2.5, -0.5, -1.5),
// saturates sums far out of range (past 2^22, where adding roundMagic no
// longer rounds to integers, and past int32's float range), adds the bias
// in int32, and gives the same from int32 and exact float32 sums.
func TestRequantRow(t *testing.T) {
	acc := []int32{1, 3, 5, -1, -3, 1 << 30, -1 << 30, 1<<24 + 1, math.MaxInt32, math.MinInt32}
	want := []uint8{10, 12, 12, 10, 8, 255, 0, 255, 255, 0}
	got := make([]uint8, len(acc))
	requantRow(got, acc, 0, 0.5, nil, 10)
	assert.Equal(t, want, got)
	f := []float32{1, 3, 5, -1, -3}
	requantRow(got[:5], f, 0, 0.5, nil, 10)
	assert.Equal(t, want[:5], got[:5])
	// int8, a bias, per-value multipliers.
	g8 := make([]int8, 4)
	requantRow(g8, []int32{0, 0, 100, -100}, 3, 0, []float32{0.5, 1.5, 2, 2}, -1)
	assert.Equal(t, []int8{1, 3, 127, -128}, g8) // 1.5 -> 2, 4.5 -> 4, 206 and -194 saturate
}
