package raster_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rastertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A band whose header declares 16384 x 16384 pixels in a small Deflate file
// (a decompression bomb among real bands) fails the scan on its size, from
// the headers alone: the scan allocates a few megabytes, not the 512 MB the
// band would decode to.
func TestScanComparesSizesBeforeDecoding(t *testing.T) {
	dir := copyScene(t)
	b5 := filepath.Join(dir, raster.SampleSceneID+"_B5.TIF")
	f, err := os.Create(b5)
	require.NoError(t, err)
	require.NoError(t, rastertest.Write(f, 16384, 16384, func(x, y int) uint16 { return 0 },
		rastertest.TIFF{Tiled: true, BlockW: 1024, BlockH: 1024, Compression: rastertest.Deflate, Level: 9}))
	require.NoError(t, f.Close())
	fi, err := os.Stat(b5)
	require.NoError(t, err)
	t.Logf("bomb: %d bytes declaring 16384x16384", fi.Size())

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = raster.ScanScene(raster.SceneRef{Dir: dir, TileSize: 512, Bands: raster.DefaultBands})
	runtime.ReadMemStats(&after)
	assert.ErrorContains(t, err, b5+": band 5 is 16384x16384 but ")
	assert.ErrorContains(t, err, "_B2.TIF is 41x41: bands of a scene must have one size")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "bytes allocated by the scan")
}

// The windows a scan plans: the tiles themselves when the bands are tiled
// in blocks that divide the tile size, bands of tile rows otherwise, one
// tile each with RowStrips; and the tiles of the windows cover the scene in
// row-major order either way.
func TestScanPlansWindows(t *testing.T) {
	for _, c := range []struct {
		name    string
		lt      rastertest.TIFF
		tile    int
		strips  bool
		windows int
	}{
		{"tiled 16, tiles of 32", rastertest.TIFF{Tiled: true, BlockW: 16, BlockH: 16, Compression: rastertest.Deflate}, 32, false, 3 * 2},
		{"tiled 48, tiles of 32", rastertest.TIFF{Tiled: true, BlockW: 48, BlockH: 48, Compression: rastertest.Deflate}, 32, false, 2},
		{"stripped", rastertest.TIFF{BlockH: 7, Compression: rastertest.LZW}, 32, false, 2},
		{"tiled, row strips", rastertest.TIFF{Tiled: true, BlockW: 16, BlockH: 16}, 32, true, 2},
	} {
		dir := filepath.Join(t.TempDir(), "S")
		require.NoError(t, rastertest.WriteScene(dir, rastertest.Scene{ProductID: "S", Width: 70, Height: 50, TIFF: c.lt}))
		ref := raster.SceneRef{Dir: dir, TileSize: c.tile, Bands: raster.DefaultBands, RowStrips: c.strips}
		sc, err := raster.ScanScene(ref)
		require.NoError(t, err, c.name)
		assert.Len(t, sc.Windows, c.windows, c.name)
		assert.Equal(t, "S", sc.Scene)
		tiles, err := raster.ReadScene(ref)
		require.NoError(t, err, c.name)
		assert.Len(t, tiles, sc.Tiles, c.name)
		want, err := raster.Split(70, 50, c.tile)
		require.NoError(t, err)
		if c.strips {
			want = []raster.Rect{{W: 70, H: 32}, {Y: 32, W: 70, H: 18}}
		}
		for i, tl := range tiles {
			assert.Equal(t, want[i], tl.Rect, "%s tile %d", c.name, i)
		}
	}
}

// Every band file name comes from the MTL and must be a plain name; so
// must the product ID, which names the output directory.
func TestPlainName(t *testing.T) {
	for _, ok := range []string{raster.SampleSceneID, "LC08_L1TP_044034_20200708_20200722_02_T1_B4.TIF", "a-b.c"} {
		assert.NoError(t, raster.PlainName(ok), ok)
	}
	for bad, why := range map[string]string{
		"":            "empty name",
		"../../x":     "path separator",
		"..":          `it holds ".."`,
		"a..b":        `it holds ".."`,
		"/etc/passwd": "path separator",
		`a\b`:         "path separator",
		".hidden":     "starts with '.'",
		"a b":         `character ' '`,
		"gs:x":        `character ':'`,
		"a\x00b":      `character '\x00'`,
	} {
		err := raster.PlainName(bad)
		assert.ErrorContains(t, err, why, "%q", bad)
	}
	assert.ErrorContains(t, raster.PlainName(string(make([]byte, 256))), "more than 255")
}

// Coefficients outside a factor of 100 around what USGS publishes fail.
func TestCalibrationBounds(t *testing.T) {
	m := readMTL(t)
	for key, v := range map[string]string{
		"REFLECTANCE_MULT_BAND_4": "1e300", "REFLECTANCE_ADD_BAND_4": "-1e3",
	} {
		old := m.Fields[key]
		m.Fields[key] = v
		_, err := m.Calibration(4)
		assert.ErrorContains(t, err, "MTL: "+key+" = ")
		assert.ErrorContains(t, err, "outside")
		m.Fields[key] = old
	}
	m.Fields["REFLECTANCE_MULT_BAND_4"] = "-2e-5"
	_, err := m.Calibration(4)
	assert.ErrorContains(t, err, "REFLECTANCE_MULT_BAND_4 = -2e-05: outside [2e-07, 0.002] (USGS publishes 2.0E-05)")
}
