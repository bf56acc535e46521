package raster

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The table and the direct computation give bit-identical reflectances.
func TestTOATableEqualsFormula(t *testing.T) {
	scale, offset := 2e-5/math.Sin(58.99675180*math.Pi/180), -0.1/math.Sin(58.99675180*math.Pi/180)
	dn := make([]uint16, 1<<16)
	for i := range dn {
		dn[i] = uint16(i)
	}
	direct := make([]float32, len(dn))
	for i, v := range dn {
		direct[i] = toaValue(v, scale, offset)
	}
	viaTable := make([]float32, len(dn))
	withWidth(0, 0, func() { toaPlane(viaTable, dn, scale, offset) }) // the scalar code: large enough to build the table
	require.NotNil(t, toaTable(scale, offset, false))
	for i := range dn {
		require.Equal(t, math.Float32bits(direct[i]), math.Float32bits(viaTable[i]), "DN %d", i)
	}
}

// The fused toa_ndvi equals TOA then NDVITile bit for bit, on small tiles
// (direct formula) and large ones (tables).
func TestTOANDVIEqualsTheTwoSteps(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		tile := randomDNTile(seed)
		if seed == 3 { // large enough for the tables
			tile = randomDNTile(seed)
			tile.Rect = Rect{W: 200, H: 100}
			for i := range tile.DN {
				p := make([]uint16, tile.Area())
				for j := range p {
					p[j] = uint16(j*(i+7)) % 30000
				}
				tile.DN[i] = p
			}
		}
		fused, err := TOANDVI(tile)
		require.NoError(t, err)
		refl, err := TOA(tile)
		require.NoError(t, err)
		ndvi, err := NDVITile(refl)
		require.NoError(t, err)
		require.Equal(t, append(refl.Names, PlaneNDVI), fused.Names)
		for i, p := range append(refl.Data, ndvi.Data[0]) {
			for j := range p {
				require.Equal(t, math.Float32bits(p[j]), math.Float32bits(fused.Data[i][j]), "plane %d pixel %d", i, j)
			}
		}
	}
}

// TOANDVI writes every pixel of its planes, which it allocates without
// zeroing: with planes handed out full of a NaN no kernel writes, it still
// equals TOA then NDVITile bit for bit, at every vector width, with and
// without non-temporal stores, on sides that leave tails after the vectors
// (130x130 builds the tables for the scalar code).
func TestTOANDVIWritesEveryPixel(t *testing.T) {
	defer func(f func(int) []float32) { newPlane = f }(newPlane)
	const garbage = 0x7fa5a5a5
	newPlane = func(n int) []float32 {
		p := make([]float32, n)
		for i := range p {
			p[i] = math.Float32frombits(garbage)
		}
		return p
	}
	for _, side := range []int{1, 7, 33, 130} {
		tile := randomDNTile(uint64(side))
		tile.Rect = Rect{W: side, H: side}
		for i := range tile.DN {
			p := make([]uint16, tile.Area())
			for j := range p {
				p[j] = uint16(j*(i+7)*31) % 30000 // some 0: no-data
			}
			tile.DN[i] = p
		}
		refl, err := TOA(tile)
		require.NoError(t, err)
		ndvi, err := NDVITile(refl)
		require.NoError(t, err)
		want := append(refl.Data, ndvi.Data[0])
		for _, w := range widths() {
			for _, ntMin := range []int{1 << 62, 0} {
				withWidth(w, ntMin, func() {
					fused, err := TOANDVI(tile)
					require.NoError(t, err)
					require.Len(t, fused.Data, len(want))
					for i, p := range want {
						for j := range p {
							require.Equal(t, math.Float32bits(p[j]), math.Float32bits(fused.Data[i][j]),
								"side %d width %d ntMin %d plane %d pixel %d", side, w, ntMin, i, j)
						}
					}
				})
			}
		}
	}
}
