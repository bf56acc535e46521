package raster_test

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rastertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeWindow reads the layout of a TIFF in memory and decodes window r
// into a row-major plane.
func decodeWindow(data []byte, name string, r raster.Rect) ([]uint16, error) {
	l, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), name)
	if err != nil {
		return nil, err
	}
	out := make([]uint16, r.Area())
	err = raster.DecodeWindow(bytes.NewReader(data), l.BandHeader, l.Covering(r), r, func(y, x0 int, dn []uint16) {
		copy(out[(y-r.Y)*r.W+x0-r.X:], dn)
	})
	return out, err
}

// windowsOf returns the whole band, single pixels at its corners, and random
// windows of a w x h band.
func windowsOf(w, h int, seed uint64) []raster.Rect {
	rects := []raster.Rect{{W: w, H: h}, {W: 1, H: 1}, {X: w - 1, Y: h - 1, W: 1, H: 1}, {X: w - 1, W: 1, H: h}}
	r := rand.New(rand.NewPCG(seed, 3))
	for i := 0; i < 12; i++ {
		x, y := r.IntN(w), r.IntN(h)
		rects = append(rects, raster.Rect{X: x, Y: y, W: 1 + r.IntN(w-x), H: 1 + r.IntN(h-y)})
	}
	return rects
}

// crop cuts window r out of a row-major plane of width w.
func cropPlane(p []uint16, w int, r raster.Rect) []uint16 {
	var out []uint16
	for y := r.Y; y < r.Y+r.H; y++ {
		out = append(out, p[y*w+r.X:y*w+r.X+r.W]...)
	}
	return out
}

// Every layout the reader supports, written by rastertest: any window
// decodes to the pixels golang.org/x/image/tiff (DecodeBand) decodes for the
// whole band.
func TestDecodeWindowMatchesWholeBandDecoder(t *testing.T) {
	const w, h = 75, 53
	r := rand.New(rand.NewPCG(1, 2))
	plane := make([]uint16, w*h)
	for i := range plane {
		plane[i] = uint16(6000 + r.IntN(20000))
		if r.IntN(10) == 0 {
			plane[i] = 0
		}
	}
	// Smooth rows compress; the predictor matters on them.
	for y := 0; y < 10; y++ {
		for x := 0; x < w; x++ {
			plane[y*w+x] = uint16(1000 + 3*x + y)
		}
	}
	signed := make([]uint16, len(plane))
	for i, v := range plane {
		signed[i] = v
		if v == 0 {
			signed[i] = 0x8000 // -32768, GDAL's no-data of the crop
		} else if i%17 == 0 {
			signed[i] = uint16(0xffff - v%100) // negative: no-data too
		}
	}
	noData := int64(-32768)
	var layouts []rastertest.TIFF
	for _, comp := range []int{rastertest.None, rastertest.LZW, rastertest.Deflate} {
		for _, pred := range []bool{false, true} {
			for _, blocks := range []rastertest.TIFF{
				{BlockH: 0}, {BlockH: 1}, {BlockH: 7},
				{Tiled: true, BlockW: 16, BlockH: 16}, {Tiled: true, BlockW: 32, BlockH: 48}, {Tiled: true, BlockW: 80, BlockH: 64},
			} {
				blocks.Compression, blocks.Predictor = comp, pred
				layouts = append(layouts, blocks)
			}
		}
	}
	layouts = append(layouts,
		rastertest.TIFF{BlockH: 5, Compression: rastertest.LZW, BigEndian: true},
		rastertest.TIFF{Tiled: true, BlockW: 16, BlockH: 32, Compression: rastertest.Deflate, Predictor: true, BigEndian: true},
		rastertest.TIFF{BlockH: 9, Compression: rastertest.LZW, Predictor: true, Signed: true, NoData: &noData},
		rastertest.TIFF{Tiled: true, BlockW: 32, BlockH: 16, Compression: rastertest.Deflate, Signed: true, NoData: &noData},
	)
	for i, lt := range layouts {
		name := fmt.Sprintf("layout%d.TIF", i)
		src := plane
		if lt.Signed {
			src = signed
		}
		data, err := rastertest.Encode(w, h, rastertest.Slice(src, w), lt)
		require.NoError(t, err, "%+v", lt)
		ww, hh, want, err := raster.DecodeBand(bytes.NewReader(data), name)
		require.NoError(t, err, "x/image/tiff cannot read layout %+v", lt)
		require.Equal(t, []int{w, h}, []int{ww, hh})
		for _, win := range windowsOf(w, h, uint64(i)) {
			got, err := decodeWindow(data, name, win)
			require.NoError(t, err, "layout %+v window %v", lt, win)
			require.Equal(t, cropPlane(want, w, win), got, "layout %+v window %v", lt, win)
		}
	}
}

// The committed crop's bands (int16, LZW, one strip, GDAL no-data), and
// copies of band 4 that GDAL wrote in other layouts (testdata/gdal,
// made by testdata/gdal/make.sh): every window decodes as x/image/tiff
// decodes the whole band.
func TestDecodeWindowRealFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "gdal", "*.TIF"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "testdata/gdal holds GDAL's copies of band 4")
	for _, b := range []int{2, 3, 4, 5} {
		files = append(files, bandPath(b))
	}
	for i, name := range files {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		w, h, want, err := raster.DecodeBand(bytes.NewReader(data), name)
		require.NoError(t, err)
		l, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), name)
		require.NoError(t, err)
		t.Logf("%s: %dx%d tiled=%v blocks %dx%d compression %d predictor %d", filepath.Base(name), w, h, l.Tiled, l.BlockW, l.BlockH, l.Compression, l.Predictor)
		for _, win := range windowsOf(w, h, uint64(i)) {
			got, err := decodeWindow(data, name, win)
			require.NoError(t, err, "%s window %v", name, win)
			require.Equal(t, cropPlane(want, w, win), got, "%s window %v", name, win)
		}
	}
}

// A window reads only the blocks that cover it.
func TestDecodeWindowReadsOnlyCoveringBlocks(t *testing.T) {
	const w, h = 64, 64
	data, err := rastertest.Encode(w, h, func(x, y int) uint16 { return uint16(x + 100*y) },
		rastertest.TIFF{Tiled: true, BlockW: 16, BlockH: 16, Compression: rastertest.Deflate})
	require.NoError(t, err)
	l, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), "t.TIF")
	require.NoError(t, err)
	win := raster.Rect{X: 20, Y: 20, W: 10, H: 10} // inside tile (1, 1) only
	blocks := l.Covering(win)
	require.Len(t, blocks, 1)
	assert.Equal(t, 5, blocks[0].Index)
	rec := &recordingReader{r: bytes.NewReader(data)}
	got := make([]uint16, win.Area())
	require.NoError(t, raster.DecodeWindow(rec, l.BandHeader, blocks, win, func(y, x0 int, dn []uint16) {
		copy(got[(y-win.Y)*win.W+x0-win.X:], dn)
	}))
	assert.Equal(t, uint16(20+100*20), got[0])
	for _, r := range rec.reads {
		assert.True(t, r[0] >= blocks[0].Offset && r[0]+r[1] <= blocks[0].Offset+blocks[0].Count, "read %v outside block 5", r)
	}
}

type recordingReader struct {
	r     *bytes.Reader
	reads [][2]int64
}

func (r *recordingReader) ReadAt(p []byte, off int64) (int, error) {
	r.reads = append(r.reads, [2]int64{off, int64(len(p))})
	return r.r.ReadAt(p, off)
}

// Headers that lie are refused before any pixel is decoded, with the file's
// name and the reason.
func TestReadLayoutRefusesBadHeaders(t *testing.T) {
	good, err := rastertest.Encode(40, 30, func(x, y int) uint16 { return 1 }, rastertest.TIFF{BlockH: 8, Compression: rastertest.Deflate})
	require.NoError(t, err)
	layout := func(data []byte) error {
		_, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), "bad.TIF")
		return err
	}
	require.NoError(t, layout(good))

	for _, c := range []struct {
		name string
		data func() ([]byte, error)
		want string
	}{
		{"truncated", func() ([]byte, error) { return good[:len(good)/2], nil }, "bad.TIF: corrupt or truncated TIFF"},
		{"not a TIFF", func() ([]byte, error) { return []byte("GIF89a, not a TIFF at all"), nil }, "bad.TIF: not a readable band GeoTIFF: not a TIFF file"},
		{"too wide", func() ([]byte, error) {
			return rastertest.Encode(raster.MaxBandSide+1, 1, func(x, y int) uint16 { return 0 }, rastertest.TIFF{Compression: rastertest.Deflate})
		}, "more than 32768 a side"},
		{"tiles too large", func() ([]byte, error) {
			return rastertest.Encode(16, 16, func(x, y int) uint16 { return 0 }, rastertest.TIFF{Tiled: true, BlockW: 8192, BlockH: 4096, Compression: rastertest.Deflate})
		}, "tiles of 8192x4096 pixels: more than 33554432 bytes each"},
		{"uncompressed block shorter than its pixels", func() ([]byte, error) {
			d, err := rastertest.Encode(40, 30, func(x, y int) uint16 { return 1 }, rastertest.TIFF{})
			if err != nil {
				return nil, err
			}
			return patchTag(d, 279, 100), nil // StripByteCounts of the single strip
		}, "uncompressed block 0 holds 100 bytes, its 40x30 pixels need 2400"},
	} {
		data, err := c.data()
		require.NoError(t, err, c.name)
		err = layout(data)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), "bad.TIF", c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}

// patchTag sets the inline value of tag in the first IFD of a little-endian
// TIFF.
func patchTag(data []byte, tag uint16, v uint32) []byte {
	d := append([]byte(nil), data...)
	le := func(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24 }
	off := int(le(d[4:]))
	n := int(d[off]) | int(d[off+1])<<8
	for i := 0; i < n; i++ {
		e := d[off+2+12*i:]
		if uint16(e[0])|uint16(e[1])<<8 == tag {
			e[8], e[9], e[10], e[11] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
	}
	return d
}

// A Deflate strip that expands to far more than its header declares (a
// decompression bomb: 64 MiB of zeros in 64 KB) is decoded no further than
// the header's size: the memory used is the window's, not the bomb's.
func TestDecodeWindowBoundsDecompression(t *testing.T) {
	const w, h = 64, 64
	var bomb bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&bomb, zlib.BestCompression)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 64; i++ {
		zw.Write(zeros)
	}
	zw.Close()
	// A one-strip file whose strip is the bomb.
	data, err := rastertest.Encode(w, h, func(x, y int) uint16 { return 0 }, rastertest.TIFF{Compression: rastertest.Deflate})
	require.NoError(t, err)
	l, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), "bomb.TIF")
	require.NoError(t, err)
	file := append(append([]byte(nil), data...), bomb.Bytes()...)
	blocks := []raster.Block{{Index: 0, Offset: int64(len(data)), Count: int64(bomb.Len())}}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	win := raster.Rect{W: w, H: h}
	err = raster.DecodeWindow(bytes.NewReader(file), l.BandHeader, blocks, win, func(int, int, []uint16) {})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "bytes allocated decoding a 64x64 window of a bomb")

	// The header's own bound refuses such a strip outright: compressed
	// blocks larger than twice their decoded size.
	_, err = raster.ReadLayout(bytes.NewReader(patchTag(file, 279, uint32(bomb.Len()))), int64(len(file)), "bomb.TIF")
	assert.ErrorContains(t, err, "bomb.TIF: not a readable band GeoTIFF: compressed block 0 of")
}

// Corrupt compressed data is an error naming the file and the block.
func TestDecodeWindowCorruptData(t *testing.T) {
	data, err := rastertest.Encode(64, 64, func(x, y int) uint16 { return uint16(x * y) },
		rastertest.TIFF{Tiled: true, BlockW: 32, BlockH: 32, Compression: rastertest.Deflate})
	require.NoError(t, err)
	l, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), "c.TIF")
	require.NoError(t, err)
	for i := l.Offsets[3]; i < l.Offsets[3]+l.Counts[3]; i++ {
		data[i] ^= 0x55
	}
	_, err = decodeWindow(data, "c.TIF", raster.Rect{W: 64, H: 64})
	assert.ErrorContains(t, err, "c.TIF: corrupt or truncated TIFF: block 3")
}
