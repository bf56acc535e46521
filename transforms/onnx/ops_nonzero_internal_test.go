package onnx

import (
	"math"
	"math/rand"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/require"
)

// NonZero's loops (by element size, the rows of the last axis) equal the
// byte-at-a-time walk with an odometer of coordinates, on random shapes of
// rank 0 to 4 with -0.0, NaN and zeros.
func TestNonZeroMatchesWalk(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for c := 0; c < 300; c++ {
		shape := make([]int, rng.Intn(5))
		for d := range shape {
			shape[d] = rng.Intn(5)
		}
		var x nd.Array
		switch c % 5 {
		case 0:
			v := make([]float32, numel(shape))
			for i := range v {
				switch rng.Intn(5) {
				case 0:
					v[i] = float32(math.Copysign(0, -1))
				case 1:
					v[i] = float32(math.NaN())
				case 2:
					v[i] = rng.Float32() - 0.5
				}
			}
			x = nd.Of(v, shape...)
		case 1:
			v := make([]bool, numel(shape))
			for i := range v {
				v[i] = rng.Intn(2) == 0
			}
			x = nd.Of(v, shape...)
		case 3:
			v := make([]float64, numel(shape))
			for i := range v {
				switch rng.Intn(4) {
				case 0:
					v[i] = math.Copysign(0, -1)
				case 1:
					v[i] = math.NaN()
				case 2:
					v[i] = rng.Float64() - 0.5
				}
			}
			x = nd.Of(v, shape...)
		case 4:
			v := make([]int16, numel(shape))
			for i := range v {
				v[i] = int16(rng.Intn(3)-1) * -32768
			}
			x = nd.Of(v, shape...)
		default:
			v := make([]int64, numel(shape))
			for i := range v {
				v[i] = int64(rng.Intn(3) - 1)
			}
			x = nd.Of(v, shape...)
		}
		// the walk
		var want []int64
		coord := make([]int, len(shape))
		size := x.Type.Size()
		var cols [][]int
		for i := 0; i < len(x.Data); i += size {
			if nonZeroAt(x, i) {
				cols = append(cols, append([]int{}, coord...))
			}
			for d := len(shape) - 1; d >= 0; d-- {
				if coord[d]++; coord[d] < shape[d] {
					break
				}
				coord[d] = 0
			}
		}
		for d := range shape {
			for _, col := range cols {
				want = append(want, int64(col[d]))
			}
		}
		out, err := nonZeroKernel{}.RunShaped([]nd.Array{x}, func(t nd.DType, s []int) (nd.Array, error) { return nd.Zeros(t, s...), nil })
		require.NoError(t, err)
		require.Equal(t, []int{len(shape), len(cols)}, out[0].Shape, "case %d %v", c, x)
		require.Equal(t, len(want), out[0].Len())
		if len(want) > 0 {
			require.Equal(t, want, nd.MustAs[int64](out[0]), "case %d %v", c, x)
		}
	}
}

// nonZeroAt reports whether a's element at byte i has a bit set, -0.0
// aside: the test's reference, a byte at a time.
func nonZeroAt(a nd.Array, i int) bool {
	size := a.Type.Size()
	b := a.Data[i : i+size]
	if a.Type.IsFloat() { // -0.0 is zero: its sign bit alone set
		b = append([]byte{b[size-1] &^ 0x80}, b[:size-1]...)
	}
	for _, v := range b {
		if v != 0 {
			return true
		}
	}
	return false
}
