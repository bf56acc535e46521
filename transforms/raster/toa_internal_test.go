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
	toaPlane(viaTable, dn, scale, offset) // large enough to build the table
	require.NotNil(t, toaTable(scale, offset, false))
	for i := range dn {
		require.Equal(t, math.Float32bits(direct[i]), math.Float32bits(viaTable[i]), "DN %d", i)
	}
}
