package raster_test

import (
	"bytes"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rastertest"
)

// A window of a tiled, Deflate-compressed band is decoded from the one tile
// that covers it; the header tells which.
func ExampleDecodeWindow() {
	band, _ := rastertest.Encode(64, 48, func(x, y int) uint16 { return uint16(100*y + x) },
		rastertest.TIFF{Tiled: true, BlockW: 32, BlockH: 16, Compression: rastertest.Deflate, Predictor: true})
	l, err := raster.ReadLayout(bytes.NewReader(band), int64(len(band)), "B4.TIF")
	if err != nil {
		fmt.Println(err)
		return
	}
	win := raster.Rect{X: 40, Y: 20, W: 3, H: 2}
	blocks := l.Covering(win)
	fmt.Printf("%dx%d in %d tiles of %dx%d; the window needs tile %d\n", l.Width, l.Height, len(l.Offsets), l.BlockW, l.BlockH, blocks[0].Index)
	err = raster.DecodeWindow(bytes.NewReader(band), l.BandHeader, blocks, win, func(y, x0 int, dn []uint16) {
		fmt.Println("row", y, "from column", x0, ":", dn)
	})
	fmt.Println("error:", err)

	// A header that lies is refused before any pixel is decoded.
	_, err = raster.ReadLayout(bytes.NewReader(band[:200]), 200, "B4.TIF")
	fmt.Println(err)
	// Output:
	// 64x48 in 6 tiles of 32x16; the window needs tile 3
	// row 20 from column 40 : [2040 2041 2042]
	// row 21 from column 40 : [2140 2141 2142]
	// error: <nil>
	// B4.TIF: corrupt or truncated TIFF: first IFD offset 460 out of range (file of 200 bytes)
}

// Product IDs and band file names from an MTL name files: they must be plain.
func ExamplePlainName() {
	for _, s := range []string{"LC08_L1TP_044034_20200708_20200722_02_T1", "../../x", "/etc/passwd"} {
		fmt.Printf("%q: %v\n", s, raster.PlainName(s))
	}
	// Output:
	// "LC08_L1TP_044034_20200708_20200722_02_T1": <nil>
	// "../../x": not a plain file name: it holds a path separator
	// "/etc/passwd": not a plain file name: it holds a path separator
}
