package raster_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/raster"
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
