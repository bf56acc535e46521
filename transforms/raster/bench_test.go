package raster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/raster"
)

// mosaicTile returns a size x size tile of bands 4 and 5 of the committed
// scene, the 41x41 crop repeated.
func mosaicTile(b testing.TB, size int) raster.DNTile {
	tiles, err := raster.ReadScene(raster.SceneRef{Dir: raster.SampleSceneDir(), TileSize: 64, Bands: []int{4, 5}})
	if err != nil {
		b.Fatal(err)
	}
	src := tiles[0]
	t := raster.DNTile{Scene: src.Scene, SceneW: size, SceneH: size, Rect: raster.Rect{W: size, H: size},
		SunElevation: src.SunElevation, Cal: src.Cal, DN: make([][]uint16, 2)}
	for i := range t.DN {
		t.DN[i] = make([]uint16, size*size)
		for y := 0; y < size; y++ {
			for x := 0; x < size; x++ {
				t.DN[i][y*size+x] = src.DN[i][(y%src.H)*src.W+x%src.W]
			}
		}
	}
	return t
}

// chainBytes is what the TOA+NDVI chain moves per pixel: two uint16 DNs in,
// two float32 reflectances and one float32 NDVI out.
const chainBytes = 2*2 + 2*4 + 4

// BenchmarkTOANDVI runs the CPU chain TOA -> NDVI (the fused toa_ndvi step,
// as the landsat pipeline runs it) and reports it as a ratio
// to a plain copy of the same number of bytes (chainBytes per pixel),
// measured in the same run: ratio_to_copy = copy time / chain time, 1 being
// as fast as memory allows. Two tile sizes: 512x512 (1 MiB per float32
// plane, the pipeline's default tile; the copy runs in cache) and 4096x4096
// (64 MiB per plane, a whole-scene plane; the copy runs from memory).
func BenchmarkTOANDVI(b *testing.B) {
	for _, size := range []int{512, 4096} {
		b.Run(fmt.Sprintf("tile=%d", size), func(b *testing.B) { benchTOANDVI(b, size) })
	}
}

func benchTOANDVI(b *testing.B, size int) {
	tile := mosaicTile(b, size)
	px := size * size
	src, dst := make([]byte, px*chainBytes), make([]byte, px*chainBytes)

	var chain, cp time.Duration
	b.SetBytes(int64(px * chainBytes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := raster.TOANDVI(tile); err != nil { // the chain as the pipeline runs it
			b.Fatal(err)
		}
		chain += time.Since(start)

		start = time.Now()
		copy(dst, src)
		cp += time.Since(start)
	}
	b.ReportMetric(float64(chain.Nanoseconds())/float64(b.N)/float64(px), "ns/pixel")
	b.ReportMetric(float64(cp.Nanoseconds())/float64(b.N)/float64(px), "copy-ns/pixel")
	b.ReportMetric(float64(cp)/float64(chain), "ratio_to_copy")
}
