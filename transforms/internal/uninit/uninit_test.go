package uninit

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Slice gives slices of the asked length and capacity, of sizes from a
// small size class to a large object, that can be written and read back.
func TestSlice(t *testing.T) {
	for _, n := range []int{0, 1, 3, 100, 8191, 1 << 20} {
		s := Slice[float32](n)
		require.Len(t, s, n)
		require.Equal(t, n, cap(s))
		for i := range s {
			s[i] = float32(i)
		}
		for i := range s {
			require.Equal(t, float32(i), s[i])
		}
	}
	require.Len(t, Slice[uint8](5), 5)
	require.Len(t, Slice[float64](5), 5)
}

// As make, a negative length panics.
func TestSliceNegative(t *testing.T) {
	n := -1
	require.Panics(t, func() { Slice[float32](n) })
}

// The memory is the collector's: slices survive collections while reachable
// and are freed when not (many more allocations than the heap could hold
// otherwise, here 4 GiB through 16 MiB slices).
func TestSliceCollected(t *testing.T) {
	keep := Slice[uint64](1 << 10)
	for i := range keep {
		keep[i] = uint64(i) * 3
	}
	for range 256 {
		s := Slice[byte](16 << 20)
		s[0], s[len(s)-1] = 1, 2
	}
	runtime.GC()
	for i := range keep {
		require.Equal(t, uint64(i)*3, keep[i])
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	require.Less(t, ms.HeapSys, uint64(1<<30))
}
