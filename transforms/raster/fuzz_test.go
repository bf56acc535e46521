package raster_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rastertest"
	"golang.org/x/image/tiff"
)

// The seeds of these fuzz tests are in testdata/fuzz/<FuzzName>/: real files
// of the committed scene and damaged copies. Run one with, for example,
// go test ./transforms/raster -run '^$' -fuzz FuzzDecodeBand -fuzztime 1m

func FuzzParseMTL(f *testing.F) {
	f.Fuzz(func(t *testing.T, data string) {
		m, err := raster.ParseMTL(strings.NewReader(data), "f_MTL.txt")
		if err != nil {
			if !strings.Contains(err.Error(), "f_MTL.txt") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if !(m.SunElevation > 0 && m.SunElevation <= 90) || m.ProductID == "" {
			t.Fatalf("accepted invalid metadata: %+v", m)
		}
	})
}

func FuzzDecodeBand(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		w, h, dn, err := raster.DecodeBand(bytes.NewReader(data), "f.TIF")
		if err != nil {
			if !strings.Contains(err.Error(), "f.TIF") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if w <= 0 || h <= 0 || len(dn) != w*h {
			t.Fatalf("decoded %dx%d with %d pixels", w, h, len(dn))
		}
	})
}

func FuzzSplitAssemble(f *testing.F) {
	f.Fuzz(func(t *testing.T, w, h, size uint16) {
		W, H, S := int(w%300), int(h%300), int(size%400)
		rects, err := raster.Split(W, H, S)
		if err != nil {
			if W > 0 && H > 0 && S > 0 {
				t.Fatalf("Split(%d, %d, %d): %v", W, H, S, err)
			}
			return
		}
		var tiles []raster.Tile
		for _, r := range rects {
			if r.W <= 0 || r.H <= 0 || r.W > S || r.H > S {
				t.Fatalf("Split(%d, %d, %d) gave %v", W, H, S, r)
			}
			p := make([]float32, r.Area())
			for y := 0; y < r.H; y++ {
				for x := 0; x < r.W; x++ {
					p[y*r.W+x] = float32((r.Y+y)*W + r.X + x)
				}
			}
			tiles = append(tiles, raster.Tile{Scene: "f", SceneW: W, SceneH: H, Rect: r, Names: []string{"B4"}, Data: [][]float32{p}})
		}
		out, err := raster.Assemble(tiles)
		if err != nil {
			t.Fatalf("Assemble(Split(%d, %d, %d)): %v", W, H, S, err)
		}
		for i, v := range out.Data[0] {
			if v != float32(i) {
				t.Fatalf("pixel %d = %v", i, v)
			}
		}
	})
}

func FuzzDecodeTile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if tl, err := raster.DecodeTile(data); err == nil {
			if _, err := raster.EncodeTile(tl); err != nil {
				t.Fatalf("decoded a tile that does not encode: %v", err)
			}
		}
		_, _ = raster.DecodeDNTile(data)
		_, _ = raster.DecodeRGBATile(data)
	})
}

// FuzzDecodeWindow fuzzes the windowed reader: ReadLayout, then a window
// chosen by the fuzzer decoded with DecodeWindow. Errors must name the
// file; a decoded window has its pixels; and where golang.org/x/image/tiff
// (DecodeBand) also decodes the file, the window holds the same DNs. The
// seeds are band files in every layout the reader supports (rastertest and
// GDAL's) and the committed crop's bands.
func FuzzDecodeWindow(f *testing.F) {
	for _, name := range fuzzSeedFiles(f) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(3), uint8(5), uint8(20), uint8(9))
	}
	noData := int64(-32768)
	for i, lt := range []rastertest.TIFF{
		{BlockH: 3, Compression: rastertest.LZW, Predictor: true},
		{Tiled: true, BlockW: 16, BlockH: 16, Compression: rastertest.Deflate},
		{BlockH: 4, BigEndian: true},
		{Tiled: true, BlockW: 32, BlockH: 16, Compression: rastertest.LZW, Signed: true, NoData: &noData},
	} {
		data, err := rastertest.Encode(37, 21, func(x, y int) uint16 { return uint16(x*y + i) }, lt)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(i), uint8(2*i), uint8(17), uint8(30))
	}
	f.Fuzz(func(t *testing.T, data []byte, x0, y0, ww, hh uint8) {
		l, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), "f.TIF")
		if err != nil {
			if !strings.Contains(err.Error(), "f.TIF") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if l.Width*l.Height > 1<<16 {
			return // large bands: slow, and covered by the tests
		}
		win := raster.Rect{X: int(x0) % l.Width, Y: int(y0) % l.Height}
		win.W, win.H = 1+int(ww)%(l.Width-win.X), 1+int(hh)%(l.Height-win.Y)
		got := make([]uint16, win.Area())
		var seen atomic.Int64 // put runs on several goroutines
		err = raster.DecodeWindow(bytes.NewReader(data), l.BandHeader, l.Covering(win), win, func(y, x int, dn []uint16) {
			seen.Add(int64(len(dn)))
			copy(got[(y-win.Y)*win.W+x-win.X:], dn)
		})
		if err != nil {
			if !strings.Contains(err.Error(), "f.TIF") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if seen.Load() != int64(win.Area()) {
			t.Fatalf("window %v: %d pixels decoded, want %d", win, seen.Load(), win.Area())
		}
		// The reference decodes the whole band: only where it sees the
		// same small band (it reads the header its own way).
		if cfg, err := tiff.DecodeConfig(bytes.NewReader(data)); err != nil || cfg.Width != l.Width || cfg.Height != l.Height {
			return
		}
		if w, _, whole, err := raster.DecodeBand(bytes.NewReader(data), "f.TIF"); err == nil {
			for y := 0; y < win.H; y++ {
				for x := 0; x < win.W; x++ {
					if a, b := got[y*win.W+x], whole[(win.Y+y)*w+win.X+x]; a != b {
						t.Fatalf("window %v pixel (%d, %d): %d, x/image/tiff decodes %d", win, win.X+x, win.Y+y, a, b)
					}
				}
			}
		}
	})
}

// fuzzSeedFiles are the committed band files: the crop's and GDAL's copies.
func fuzzSeedFiles(f *testing.F) []string {
	names, err := filepath.Glob(filepath.Join("testdata", "gdal", "*.TIF"))
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range []int{2, 4, 5} {
		names = append(names, filepath.Join(raster.SampleSceneDir(), raster.SampleSceneID+"_B"+string(rune('0'+b))+".TIF"))
	}
	return names
}
