package raster_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Values of the committed scene, from its MTL and from the statistics GDAL
// stored in each band's GeoTIFF (STATISTICS_MINIMUM/MAXIMUM/MEAN).
const (
	sunElevation = 58.99675180
	mult         = 2.0e-5
	add          = -0.1
)

var gdalStats = map[int]struct {
	min, max uint16
	mean     float64
}{
	2: {8709, 15069, 9710.8851873885},
	3: {7647, 14143, 8977.3444378346},
	4: {6600, 15257, 8367.9369422963},
	5: {8337, 25759, 15496.998215348},
}

func bandPath(b int) string {
	return filepath.Join(raster.SampleSceneDir(), raster.SampleSceneID+"_B"+string(rune('0'+b))+".TIF")
}

func readMTL(t *testing.T) raster.MTL {
	t.Helper()
	f, err := os.Open(filepath.Join(raster.SampleSceneDir(), raster.SampleSceneID+"_MTL.txt"))
	require.NoError(t, err)
	defer f.Close()
	m, err := raster.ParseMTL(f, "MTL")
	require.NoError(t, err)
	return m
}

func TestParseMTLRealScene(t *testing.T) {
	m := readMTL(t)
	assert.Equal(t, raster.SampleSceneID, m.ProductID)
	assert.Equal(t, sunElevation, m.SunElevation)
	for _, b := range []int{2, 3, 4, 5} {
		c, err := m.Calibration(b)
		require.NoError(t, err)
		assert.Equal(t, raster.Calibration{Band: b, Mult: mult, Add: add}, c)
	}
	name, err := m.BandFile(4)
	require.NoError(t, err)
	assert.Equal(t, raster.SampleSceneID+"_B4.TIF", name)
}

func TestParseMTLErrors(t *testing.T) {
	real, err := os.ReadFile(filepath.Join(raster.SampleSceneDir(), raster.SampleSceneID+"_MTL.txt"))
	require.NoError(t, err)
	without := func(key string) string {
		var lines []string
		for _, l := range strings.Split(string(real), "\n") {
			if !strings.Contains(l, key+" =") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}

	_, err = raster.ParseMTL(strings.NewReader(without("SUN_ELEVATION")), "s_MTL.txt")
	assert.EqualError(t, err, "s_MTL.txt: missing SUN_ELEVATION")

	m, err := raster.ParseMTL(strings.NewReader(without("REFLECTANCE_ADD_BAND_4")), "s_MTL.txt")
	require.NoError(t, err)
	_, err = m.Calibration(4)
	assert.EqualError(t, err, "s_MTL.txt: missing REFLECTANCE_ADD_BAND_4")

	bad := strings.Replace(string(real), "SUN_ELEVATION = 58.99675180", "SUN_ELEVATION = -3.2", 1)
	_, err = raster.ParseMTL(strings.NewReader(bad), "s_MTL.txt")
	assert.ErrorContains(t, err, "SUN_ELEVATION = -3.2: want (0, 90] degrees")

	bad = strings.Replace(string(real), "REFLECTANCE_MULT_BAND_5 = 2.0000E-05", "REFLECTANCE_MULT_BAND_5 = NaN", 1)
	m, err = raster.ParseMTL(strings.NewReader(bad), "s_MTL.txt")
	require.NoError(t, err)
	_, err = m.Calibration(5)
	assert.EqualError(t, err, `s_MTL.txt: REFLECTANCE_MULT_BAND_5 = "NaN" is not a finite number`)

	_, err = raster.ParseMTL(strings.NewReader("hello world\n"), "x.txt")
	assert.ErrorContains(t, err, "x.txt:1: not a KEY = VALUE line")
	_, err = raster.ParseMTL(strings.NewReader(""), "empty_MTL.txt")
	assert.EqualError(t, err, "empty_MTL.txt: no metadata fields: not a Landsat _MTL.txt file")
}

func TestDecodeBandMatchesGDALStatistics(t *testing.T) {
	for b, want := range gdalStats {
		f, err := os.Open(bandPath(b))
		require.NoError(t, err)
		w, h, dn, err := raster.DecodeBand(f, bandPath(b))
		f.Close()
		require.NoError(t, err)
		require.Equal(t, []int{41, 41}, []int{w, h})
		lo, hi, sum := uint16(math.MaxUint16), uint16(0), 0.0
		for _, v := range dn {
			lo, hi, sum = min(lo, v), max(hi, v), sum+float64(v)
		}
		assert.Equal(t, want.min, lo, "band %d min", b)
		assert.Equal(t, want.max, hi, "band %d max", b)
		assert.InDelta(t, want.mean, sum/float64(len(dn)), 1e-6, "band %d mean", b)
	}
}

func TestDecodeBandErrors(t *testing.T) {
	data, err := os.ReadFile(bandPath(4))
	require.NoError(t, err)

	_, _, _, err = raster.DecodeBand(bytes.NewReader(data[:len(data)/2]), "B4.TIF")
	assert.ErrorContains(t, err, "B4.TIF: corrupt or truncated TIFF")

	_, _, _, err = raster.DecodeBand(bytes.NewReader(data[:100]), "B4.TIF")
	assert.ErrorContains(t, err, "B4.TIF: not a readable TIFF")

	_, _, _, err = raster.DecodeBand(strings.NewReader("GIF89a..."), "x.TIF")
	assert.ErrorContains(t, err, "x.TIF: not a readable TIFF: not a classic TIFF")

	corrupt := append([]byte(nil), data...)
	for i := 800; i < 1600; i++ { // inside the LZW strip
		corrupt[i] ^= 0x5a
	}
	_, _, _, err = raster.DecodeBand(bytes.NewReader(corrupt), "B4.TIF")
	assert.ErrorContains(t, err, "B4.TIF: corrupt or truncated TIFF")
}

// TOA and NDVI from first principles, on DNs of the committed scene (the
// minimum and maximum of band 4 as GDAL recorded them) and the scene's MTL,
// against values computed by hand: (2e-5*DN - 0.1) / sin(58.99675180 deg).
func TestTOAFirstPrinciples(t *testing.T) {
	tile := raster.DNTile{Scene: "s", SceneW: 5, SceneH: 1, Rect: raster.Rect{W: 5, H: 1}, SunElevation: sunElevation,
		Cal: []raster.Calibration{{Band: 4, Mult: mult, Add: add}},
		DN:  [][]uint16{{6600, 15257, 8000, 1, 0}}}
	out, err := raster.TOA(tile)
	require.NoError(t, err)
	assert.Equal(t, []string{"B4"}, out.Names)
	want := []float32{0.037333540495413965, 0.23933132803841314, 0.07000038842890118, -0.11664398058535899}
	for i, w := range want {
		assert.Equal(t, w, out.Data[0][i], "DN %d", tile.DN[0][i]) // exact float32 rounding of the formula
	}
	assert.True(t, math.IsNaN(float64(out.Data[0][4])), "DN 0 is no-data")
}

func TestNDVIFirstPrinciples(t *testing.T) {
	nan := float32(math.NaN())
	in := raster.Tile{Scene: "s", SceneW: 5, SceneH: 1, Rect: raster.Rect{W: 5, H: 1}, Names: []string{"B4", "B5"},
		Data: [][]float32{
			{0.07000038842890118, 0.1, nan, 0.2, -0.1},
			{0.35000194214450596, 0.1, 0.3, nan, 0.1},
		}}
	out, err := raster.NDVITile(in)
	require.NoError(t, err)
	assert.Equal(t, []string{"NDVI"}, out.Names)
	// B4 = TOA(8000), B5 = TOA(20000): (r5 - r4) / (r5 + r4) = 0.6666667 by hand.
	assert.InDelta(t, 0.6666666666666667, out.Data[0][0], 1e-6)
	assert.Equal(t, float32(0), out.Data[0][1])
	for i := 2; i < 5; i++ {
		assert.True(t, math.IsNaN(float64(out.Data[0][i])), "pixel %d: NaN input or zero sum gives NaN", i)
	}

	_, err = raster.NDVITile(raster.Tile{Scene: "s", Rect: raster.Rect{W: 1, H: 1}, Names: []string{"B4"}, Data: [][]float32{{1}}})
	assert.EqualError(t, err, `s(0,0 1x1): no plane "B5" (have [B4])`)
}

func TestTOAErrors(t *testing.T) {
	tile := raster.DNTile{Scene: "s", Rect: raster.Rect{W: 2, H: 2}, SunElevation: 40,
		Cal: []raster.Calibration{{Band: 4, Mult: mult, Add: add}}, DN: [][]uint16{{1, 2, 3}}}
	_, err := raster.TOA(tile)
	assert.EqualError(t, err, "s(0,0 2x2): plane 0 has 3 pixels, window 2x2 needs 4")
	tile.DN[0] = []uint16{1, 2, 3, 4}
	tile.SunElevation = 0
	_, err = raster.TOA(tile)
	assert.EqualError(t, err, "s(0,0 2x2): sun elevation 0: want (0, 90] degrees")
}

func TestReadSceneTilesCoverTheScene(t *testing.T) {
	tiles, err := raster.ReadScene(raster.SceneRef{Dir: raster.SampleSceneDir(), TileSize: 16, Bands: raster.DefaultBands})
	require.NoError(t, err)
	require.Len(t, tiles, 9) // 41 = 16 + 16 + 9 in each direction
	px := 0
	for _, tl := range tiles {
		assert.Equal(t, raster.SampleSceneID, tl.Scene)
		assert.Len(t, tl.DN, 4)
		px += tl.Area()
	}
	assert.Equal(t, 41*41, px)
	assert.Equal(t, raster.Rect{X: 32, Y: 32, W: 9, H: 9}, tiles[8].Rect)
}

func copyScene(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), raster.SampleSceneID)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	entries, err := os.ReadDir(raster.SampleSceneDir())
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(raster.SampleSceneDir(), e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644))
	}
	return dir
}

func TestReadSceneErrorsNameTheFile(t *testing.T) {
	ref := func(dir string) raster.SceneRef {
		return raster.SceneRef{Dir: dir, TileSize: 16, Bands: raster.DefaultBands}
	}

	// A band of another size: band 8 (82x82) in place of band 5.
	dir := copyScene(t)
	b5 := filepath.Join(dir, raster.SampleSceneID+"_B5.TIF")
	b8, err := os.ReadFile(filepath.Join(dir, raster.SampleSceneID+"_B8.TIF"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b5, b8, 0o644))
	_, err = raster.ReadScene(ref(dir))
	assert.ErrorContains(t, err, b5+": band 5 is 82x82 but ")
	assert.ErrorContains(t, err, "_B2.TIF is 41x41: bands of a scene must have one size")

	// A truncated band.
	dir = copyScene(t)
	b3 := filepath.Join(dir, raster.SampleSceneID+"_B3.TIF")
	data, err := os.ReadFile(b3)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b3, data[:len(data)-1000], 0o644))
	_, err = raster.ReadScene(ref(dir))
	assert.ErrorContains(t, err, b3+": corrupt or truncated TIFF")

	// A missing band file.
	dir = copyScene(t)
	require.NoError(t, os.Remove(filepath.Join(dir, raster.SampleSceneID+"_B2.TIF")))
	_, err = raster.ReadScene(ref(dir))
	assert.ErrorContains(t, err, "_B2.TIF: cannot open band")

	// No metadata.
	empty := t.TempDir()
	_, err = raster.ReadScene(ref(empty))
	assert.EqualError(t, err, empty+": no *_MTL.txt metadata file: not a Landsat scene directory")
}

func TestSplit(t *testing.T) {
	rects, err := raster.Split(5, 3, 2)
	require.NoError(t, err)
	assert.Equal(t, []raster.Rect{
		{0, 0, 2, 2}, {2, 0, 2, 2}, {4, 0, 1, 2},
		{0, 2, 2, 1}, {2, 2, 2, 1}, {4, 2, 1, 1},
	}, rects)
	_, err = raster.Split(5, 3, 0)
	assert.EqualError(t, err, "split: tile size 0 must be positive")
	_, err = raster.Split(0, 3, 2)
	assert.EqualError(t, err, "split: scene size 0x3 must be positive")
}

func planeTiles(t *testing.T, w, h, size int) []raster.Tile {
	t.Helper()
	rects, err := raster.Split(w, h, size)
	require.NoError(t, err)
	var tiles []raster.Tile
	for _, r := range rects {
		p := make([]float32, r.Area())
		for y := 0; y < r.H; y++ {
			for x := 0; x < r.W; x++ {
				p[y*r.W+x] = float32((r.Y+y)*w + r.X + x)
			}
		}
		tiles = append(tiles, raster.Tile{Scene: "s", SceneW: w, SceneH: h, Rect: r, Names: []string{"B4"}, Data: [][]float32{p}})
	}
	return tiles
}

func TestAssembleInvertsSplit(t *testing.T) {
	tiles := planeTiles(t, 7, 5, 3)
	// Any order.
	tiles[0], tiles[len(tiles)-1] = tiles[len(tiles)-1], tiles[0]
	out, err := raster.Assemble(tiles)
	require.NoError(t, err)
	require.Equal(t, raster.Rect{W: 7, H: 5}, out.Rect)
	for i, v := range out.Data[0] {
		require.Equal(t, float32(i), v)
	}
}

func TestAssembleErrors(t *testing.T) {
	tiles := planeTiles(t, 7, 5, 3)
	_, err := raster.Assemble(tiles[1:])
	assert.ErrorContains(t, err, "tiles cover 26 of 35 pixels")

	dup := append(append([]raster.Tile(nil), tiles...), tiles[2])
	_, err = raster.Assemble(dup)
	assert.ErrorContains(t, err, "appears twice")

	other := append([]raster.Tile(nil), tiles...)
	other[1].Scene = "t"
	_, err = raster.Assemble(other)
	assert.ErrorContains(t, err, "does not belong to scene s")

	out := append([]raster.Tile(nil), tiles...)
	out[1].X = 6
	_, err = raster.Assemble(out)
	assert.ErrorContains(t, err, "lies outside the 7x5 scene")
}

func TestTileCodersRoundTrip(t *testing.T) {
	dn := raster.DNTile{Scene: "s", SceneW: 9, SceneH: 9, Rect: raster.Rect{X: 3, Y: 4, W: 2, H: 1}, SunElevation: 58.9,
		Cal: []raster.Calibration{{4, 2e-5, -0.1}, {5, 3e-5, -0.2}}, DN: [][]uint16{{1, 65535}, {0, 7}}}
	b, err := raster.EncodeDNTile(dn)
	require.NoError(t, err)
	back, err := raster.DecodeDNTile(b)
	require.NoError(t, err)
	assert.Equal(t, dn, back)

	tile, err := raster.TOA(dn)
	require.NoError(t, err)
	b, err = raster.EncodeTile(tile)
	require.NoError(t, err)
	tback, err := raster.DecodeTile(b)
	require.NoError(t, err)
	assert.Equal(t, tile.Names, tback.Names)
	assert.True(t, math.IsNaN(float64(tback.Data[1][0])))
	assert.Equal(t, tile.Data[0], tback.Data[0])

	rgba := raster.RGBATile{Scene: "s", SceneW: 2, SceneH: 1, Rect: raster.Rect{W: 2, H: 1}, Pix: []uint8{1, 2, 3, 4, 5, 6, 7, 8}}
	b, err = raster.EncodeRGBATile(rgba)
	require.NoError(t, err)
	rback, err := raster.DecodeRGBATile(b)
	require.NoError(t, err)
	assert.Equal(t, rgba, rback)

	_, err = raster.DecodeTile(b[:len(b)-3])
	assert.Error(t, err)
	_, err = raster.EncodeTile(raster.Tile{Rect: raster.Rect{W: 2, H: 2}, Names: []string{"B4"}, Data: [][]float32{{1}}})
	assert.ErrorContains(t, err, "plane B4 has 1 pixels, want 4")
}

func TestCompositeStretchAndGamma(t *testing.T) {
	nan := float32(math.NaN())
	in := raster.CompositeInput{
		Tile: raster.Tile{Scene: "s", SceneW: 4, SceneH: 1, Rect: raster.Rect{W: 4, H: 1}, Names: []string{"B2", "B3", "B4"},
			Data: [][]float32{{0.15, 0.15, 0.15, 0.15}, {0.15, 0.15, 0.15, 0.15}, {0.0, 0.15, 0.3, nan}}},
		Stretch: raster.Stretch{Scene: "s", Lo: []float32{0.05, 0.05, 0.05}, Hi: []float32{0.25, 0.25, 0.25}, Gamma: 2},
	}
	out, err := raster.CompositeTile(in)
	require.NoError(t, err)
	// Red: 0.0 is below lo -> 0; 0.15 -> (0.1/0.2)^(1/2) = 0.7071 -> 180; 0.3 is above hi -> 255.
	assert.Equal(t, []uint8{0, 180, 180, 255}, out.Pix[0:4])
	assert.Equal(t, []uint8{180, 180, 180, 255}, out.Pix[4:8])
	assert.Equal(t, []uint8{255, 180, 180, 255}, out.Pix[8:12])
	assert.Equal(t, []uint8{0, 0, 0, 0}, out.Pix[12:16], "no-data is transparent")
}

func TestCompositeParamsValidate(t *testing.T) {
	require.NoError(t, raster.DefaultCompositeParams.Validate())
	assert.ErrorContains(t, raster.CompositeParams{Low: 50, High: 10, Gamma: 1}.Validate(), "want 0 <= low < high <= 100")
	assert.ErrorContains(t, raster.CompositeParams{Low: 1, High: 99, Gamma: 0}.Validate(), "gamma 0")
}

func TestNDVIColor(t *testing.T) {
	assert.Equal(t, uint8(0), raster.NDVIColor(float32(math.NaN())).A, "no-data is transparent")
	dense := raster.NDVIColor(0.9)
	assert.Greater(t, dense.G, dense.R, "dense vegetation is green")
	soil := raster.NDVIColor(0)
	assert.Greater(t, soil.R, soil.B, "bare soil is brown")
}

func TestStats(t *testing.T) {
	nan := float32(math.NaN())
	s := raster.Stats(raster.Tile{Rect: raster.Rect{W: 4, H: 1}, Names: []string{"B4"}, Data: [][]float32{{1, nan, 3, 2}}})
	assert.Equal(t, raster.PlaneStats{Plane: "B4", Width: 4, Height: 1, Pixels: 4, Valid: 3, NoData: 1, Mean: 2, Min: 1, Max: 3}, s)
	empty := raster.Stats(raster.Tile{Rect: raster.Rect{W: 1, H: 1}, Names: []string{"B4"}, Data: [][]float32{{nan}}})
	assert.True(t, math.IsNaN(empty.Mean))
}

// A key given twice with different values is an error naming the key and
// both lines (the last one used to win silently); the same value twice is
// accepted.
func TestParseMTLDuplicateKey(t *testing.T) {
	base := "GROUP = L1_METADATA_FILE\n LANDSAT_PRODUCT_ID = \"LC08_X\"\n SUN_ELEVATION = 50.0\n"
	_, err := raster.ParseMTL(strings.NewReader(base+" SUN_ELEVATION = 10.0\nEND_GROUP = L1_METADATA_FILE\nEND\n"), "x_MTL.txt")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `x_MTL.txt:4: SUN_ELEVATION given twice, with different values ("50.0" on line 3, "10.0" here)`)
	m, err := raster.ParseMTL(strings.NewReader(base+" SUN_ELEVATION = 50.0\nEND\n"), "x_MTL.txt")
	require.NoError(t, err)
	assert.Equal(t, 50.0, m.SunElevation)
}
