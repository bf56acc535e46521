package raster

import (
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tile handed back to toa_ndvi gives its planes to the next tile of the
// same size, which TOANDVI then writes in full: the pixels are those of
// fresh planes, bit for bit. (sync.Pool may drop what it is given, under
// the race detector at random: the reuse is required once in many tries.)
func TestRecycledPlanesAreReusedAndRewritten(t *testing.T) {
	a, b := randomDNTile(11), randomDNTile(11)
	b.DN = make([][]uint16, len(a.DN))
	for i, p := range a.DN { // other pixels, some no-data
		b.DN[i] = make([]uint16, len(p))
		for j, v := range p {
			b.DN[i][j] = (v*7 + uint16(j)) % 30000
		}
	}
	fresh, err := TOANDVI(b)
	require.NoError(t, err)
	reused := 0
	for range 50 {
		first, err := TOANDVI(a)
		require.NoError(t, err)
		recycleTile(first)
		second, err := TOANDVI(b)
		require.NoError(t, err)
		for i, p := range second.Data {
			for _, q := range first.Data {
				if unsafe.SliceData(p) == unsafe.SliceData(q) {
					reused++
				}
			}
			for j := range p {
				require.Equal(t, math.Float32bits(fresh.Data[i][j]), math.Float32bits(p[j]), "plane %d pixel %d", i, j)
			}
		}
	}
	assert.Positive(t, reused, "no plane was reused")
}

// A plane that appears twice in a tile goes back once: two planes taken
// after it are never the same memory.
func TestRecycledPlaneAppearsOnce(t *testing.T) {
	const n = 12345 // a length no other test recycles
	for range 50 {
		p := takePlane(n)
		recycleTile(Tile{Data: [][]float32{p, p[:n:n], nil}})
		x, y := takePlane(n), takePlane(n)
		require.Len(t, x, n)
		require.Len(t, y, n)
		require.NotSame(t, unsafe.SliceData(x), unsafe.SliceData(y))
	}
}
