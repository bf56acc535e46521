package nd_test

import (
	"math"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every half converts to float32 and back unchanged, and float32 values
// between two halves round to the nearer (ties to even).
func TestHalfRoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := nd.Half(h).Float32()
		if math.IsNaN(float64(f)) {
			assert.True(t, math.IsNaN(float64(nd.HalfOf(f).Float32())))
			continue
		}
		require.Equal(t, nd.Half(h), nd.HalfOf(f), "half %#04x = %v", h, f)
		require.Equal(t, nd.Half(h), nd.HalfOf64(float64(f)))
	}
	assert.Equal(t, nd.Half(0x3c00), nd.HalfOf(1+1.0/2048), "a tie rounds to even (down)")
	assert.Equal(t, nd.Half(0x3c02), nd.HalfOf(1+3.0/2048), "a tie rounds to even (up)")
	assert.Equal(t, nd.Half(0x7c00), nd.HalfOf(65520), "overflow is infinity")
	assert.Equal(t, nd.Half(0x0001), nd.HalfOf(float32(math.Ldexp(1, -24))), "the smallest subnormal")
	assert.Equal(t, nd.Half(0), nd.HalfOf(float32(math.Ldexp(1, -25))), "half the smallest subnormal ties to zero")
}

// A float64 just above a half tie rounds up directly, where rounding to
// float32 first would make it a tie and round it to even.
func TestHalfOf64RoundsOnce(t *testing.T) {
	v := 1 + 1.0/2048 + math.Ldexp(1, -40)
	assert.Equal(t, nd.Half(0x3c00), nd.HalfOf(float32(v)), "through float32: a tie, to even")
	assert.Equal(t, nd.Half(0x3c01), nd.HalfOf64(v))
}

func TestBHalf(t *testing.T) {
	assert.Equal(t, float32(1), nd.BHalfOf(1).Float32())
	assert.Equal(t, nd.BHalf(0x3f80), nd.BHalfOf(1+1.0/256), "a tie rounds to even")
	assert.True(t, math.IsNaN(float64(nd.BHalfOf(float32(math.NaN())).Float32())))
}

func TestConvert(t *testing.T) {
	a := nd.Of([]float32{-2.7, -0.5, 0, 0.5, 2.7, 300})
	i, err := nd.Convert(a, nd.Int32)
	require.NoError(t, err)
	assert.Equal(t, []int32{-2, 0, 0, 0, 2, 300}, nd.MustAs[int32](i), "truncates toward zero")
	b, err := nd.Convert(a, nd.Bool)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, false, true, true, true}, nd.MustAs[bool](b))
	u, err := nd.Convert(nd.Of([]int64{-1, 256, 7}), nd.Uint8)
	require.NoError(t, err)
	assert.Equal(t, []uint8{255, 0, 7}, nd.MustAs[uint8](u), "integers wrap")
	big, err := nd.Convert(nd.Of([]uint64{math.MaxUint64}), nd.Int64)
	require.NoError(t, err)
	assert.Equal(t, []int64{-1}, nd.MustAs[int64](big))
	_, err = nd.Convert(a, nd.String)
	assert.ErrorContains(t, err, "string")
}

func TestShapes(t *testing.T) {
	_, err := nd.New(nd.Float32, 1<<30, 1<<30, 4)
	assert.ErrorIs(t, err, nd.ErrTooLarge)
	_, err = nd.New(nd.Float32, 2, -1)
	assert.ErrorContains(t, err, "negative")
	a := nd.Of([]int64{1, 2, 3, 4, 5, 6}, 3, 2)
	r := a.Rows(1, 3)
	assert.Equal(t, []int64{3, 4, 5, 6}, nd.MustAs[int64](r))
	c, err := nd.Concat([]nd.Array{a, r})
	require.NoError(t, err)
	assert.Equal(t, []int{5, 2}, c.Shape)
	_, err = nd.Concat([]nd.Array{a, nd.Of([]int64{1, 2, 3}, 1, 3)})
	assert.ErrorContains(t, err, "only the first axis")
	s := nd.Scalar(float32(2))
	assert.Equal(t, 1, s.Len())
	assert.Equal(t, 0, s.Rank())
}

func TestAsMisaligned(t *testing.T) {
	b := nd.Bytes(17)
	a := nd.Array{Type: nd.Float32, Shape: []int{4}, Data: b[1:17]}
	v, err := nd.As[float32](a)
	require.NoError(t, err, "a misaligned view is copied")
	assert.Len(t, v, 4)
	_, err = nd.As[int32](a)
	assert.ErrorContains(t, err, "viewed as int32")
}
