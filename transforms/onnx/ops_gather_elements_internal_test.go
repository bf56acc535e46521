package onnx

import (
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GatherElements' and ScatterElements' offsets are the index's coordinates
// with the axis's replaced by its value (negative from the end), and
// gatherElements moves the elements at them, on random ranks, shapes and
// axes, indices smaller than data.
func TestElementsOffsets(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 23))
	for range 300 {
		rank := 1 + r.IntN(4)
		data, idx := make([]int, rank), make([]int, rank)
		for d := range rank {
			data[d] = 1 + r.IntN(5)
			idx[d] = 1 + r.IntN(data[d])
		}
		k := &elementsKernel{axis: r.IntN(2*rank) - rank}
		ax, _ := NormAxis(k.axis, rank)
		idx[ax] = 1 + r.IntN(6)
		ind := nd.Array{Type: nd.Int64, Shape: idx, Data: make([]byte, 8*numel(idx))}
		vals := nd.MustAs[int64](ind)
		for i := range vals {
			vals[i] = int64(r.IntN(2*data[ax]) - data[ax])
		}
		want := make([]int64, len(vals))
		st := Strides(data)
		for t := range vals {
			rest, off := t, 0
			for d := rank - 1; d >= 0; d-- {
				c := rest % idx[d]
				rest /= idx[d]
				if d == ax {
					c = int(vals[t])
					if c < 0 {
						c += data[ax]
					}
				}
				off += c * st[d]
			}
			want[t] = int64(off)
		}
		got, err := k.offsets(data, idx, ind)
		require.NoError(t, err)
		assert.Equal(t, want, got, "data %v indices %v axis %d", data, idx, ax)
		// gatherElements moves the elements at those offsets, with int64
		// and int32 indices.
		src := make([]uint32, numel(data))
		for i := range src {
			src[i] = r.Uint32()
		}
		gathered := make([]uint32, len(want))
		for i, o := range want {
			gathered[i] = src[o]
		}
		g64 := make([]uint32, len(want))
		require.NoError(t, gatherElements(g64, src, vals, data, idx, k.axis))
		assert.Equal(t, gathered, g64, "data %v indices %v axis %d", data, idx, ax)
		v32 := make([]int32, len(vals))
		for i, v := range vals {
			v32[i] = int32(v)
		}
		g32 := make([]uint32, len(want))
		require.NoError(t, gatherElements(g32, src, v32, data, idx, k.axis))
		assert.Equal(t, gathered, g32)
	}
}

// gatherElements names the first index out of range.
func TestGatherElementsBadIndex(t *testing.T) {
	src := make([]uint32, 6)
	err := gatherElements(make([]uint32, 6), src, []int64{0, 1, 2, 3, -1, 9}, []int{2, 3}, []int{2, 3}, 1)
	assert.EqualError(t, err, "index 3 (element 3 of indices) is out of range for axis 1 of size 3")
}
