package onnx

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/require"
)

// The blocked layout's vector loops give their Go loops' bits, for runs of
// 0 to 40 pixels: per-lane float64 sums added to what acc held, per-lane
// means (summed from zero, divided, rounded), and per-lane scales, in place
// too.
func TestBlockLoopsVectorAndGo(t *testing.T) {
	const B = nchwcBlock
	r := rand.New(rand.NewPCG(75, 76))
	for n := range 41 {
		x := make([]float32, n*B)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
		}
		var want, got [B]float64
		for l := range B {
			want[l] = r.NormFloat64()
			got[l] = want[l]
		}
		for q := range n {
			for l := range B {
				want[l] += float64(x[q*B+l])
			}
		}
		var sums [B]float64
		for q := range n {
			for l := range B {
				sums[l] += float64(x[q*B+l])
			}
		}
		if !blockSumVec(x, &got) {
			t.Skip("no vector kernel here")
		}
		require.Equal(t, want, got, "%d pixels", n)
		mean := make([]float32, B+1)
		mean[B] = 7 // not written past the block
		if n > 0 {
			require.True(t, blockMeanVec(mean, x))
			for l := range B {
				require.Equal(t, math.Float32bits(float32(sums[l]/float64(n))), math.Float32bits(mean[l]), "%d pixels, lane %d: the mean", n, l)
			}
		} else {
			require.False(t, blockMeanVec(mean, x), "no pixels: the caller's loop")
		}
		require.Equal(t, float32(7), mean[B])

		var s [B]float32
		for l := range s {
			s[l] = float32(r.NormFloat64())
		}
		wantY := make([]float32, len(x))
		for i := range x {
			wantY[i] = x[i] * s[i%B]
		}
		y := make([]float32, len(x)+B)
		y[len(x)] = 7 // not written past the run
		require.True(t, blockScaleVec(y[:len(x)], x, &s))
		require.Equal(t, wantY, y[:len(x)], "%d pixels", n)
		require.Equal(t, float32(7), y[len(x)])
		require.True(t, blockScaleVec(x, x, &s))
		require.Equal(t, wantY, x, "%d pixels in place", n)
	}
}

// A blocked MaxPool gives -Inf where a window holds only padding, in the
// channels that exist; the channels past C stay 0 (a blocked convolution
// reading them multiplies them by its zero weights: -Inf would make NaN).
func TestBlockedMaxPoolPaddingAlone(t *testing.T) {
	const B = nchwcBlock
	k := ewKernel(t, "MaxPool", 12, 1, intsAttrEW("kernel_shape", 2, 2), intsAttrEW("strides", 2, 2), intsAttrEW("pads", 2, 2, 0, 0))
	shape := []int{1, 20, 4, 4} // two blocks, the second of 4 channels
	x := make([]float32, blockedSize(shape))
	for i := range x {
		if i/(16*B) == 0 || i%B < 4 { // the channels that exist: 1
			x[i] = 1
		}
	}
	xa := nd.Array{Type: nd.Float32, Shape: shape, Data: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))}
	metas, err := k.Infer([]Meta{{Type: nd.Float32, Shape: shape}})
	require.NoError(t, err)
	oshape := metas[0].Shape
	require.Equal(t, []int{1, 20, 3, 3}, oshape)
	for _, vector := range []bool{true, false} {
		old := blockWidth
		if !vector {
			blockWidth = 0
		}
		ya := nd.Array{Type: nd.Float32, Shape: oshape, Data: make([]byte, 4*blockedSize(oshape))}
		require.NoError(t, nchwcMaxPool{pool: k.(*pool)}.Run([]nd.Array{xa}, []nd.Array{ya}))
		blockWidth = old
		y := rawFloats(ya)
		for b := range 2 {
			for q := range 9 {
				for l := range B {
					v, exists := y[(b*9+q)*B+l], b*B+l < 20
					switch {
					case !exists:
						require.Zero(t, v, "vector %v: block %d position %d lane %d past C", vector, b, q, l)
					case q < 3 || q%3 == 0: // the first row or column: padding alone
						require.True(t, math.IsInf(float64(v), -1), "vector %v: block %d position %d lane %d: %v", vector, b, q, l, v)
					default:
						require.Equal(t, float32(1), v, "vector %v: block %d position %d lane %d", vector, b, q, l)
					}
				}
			}
		}
	}
}

// blockedSize rounds the channels up to whole blocks of each image, not
// the batch's channels together.
func TestBlockedSize(t *testing.T) {
	require.Equal(t, 8*16*32*32, blockedSize([]int{8, 16, 32, 32}))
	require.Equal(t, 2*32*3*3, blockedSize([]int{2, 17, 3, 3}))
	require.Equal(t, 16*5, blockedSize([]int{1, 3, 5}))
	require.Equal(t, 3*48, blockedSize([]int{3, 33}))
}
