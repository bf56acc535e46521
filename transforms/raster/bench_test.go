package raster_test

import (
	"fmt"
	"testing"

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

// BenchmarkTOANDVI runs the CPU chain TOA -> NDVI (the fused toa_ndvi step)
// and reports it as a ratio to a plain copy of the same number of bytes
// (chainBytes per pixel), measured in the same run: ratio_to_copy = copy
// time / chain time, 1 being as fast as memory allows. Two tile sizes:
// 512x512 (1 MiB per float32 plane, the pipeline's default tile; the copy
// runs in cache) and 4096x4096 (64 MiB per plane, a whole-scene plane; the
// copy runs from memory). Each size runs twice:
//
//   - tile=N: as the landsat pipeline runs the step, each tile handed back
//     to it once consumed (step.RecycleOutputs), so that the next tile is
//     written into its planes;
//   - tile=N,fresh: new planes for every tile, as in a pipeline whose
//     consumers may keep tiles: at 512 the planes are then written to
//     memory while the copy runs in the cache.
func BenchmarkTOANDVI(b *testing.B) {
	for _, size := range []int{512, 4096} {
		b.Run(fmt.Sprintf("tile=%d", size), func(b *testing.B) { benchTOANDVI(b, size, true) })
		b.Run(fmt.Sprintf("tile=%d,fresh", size), func(b *testing.B) { benchTOANDVI(b, size, false) })
	}
}

func benchTOANDVI(b *testing.B, size int, recycle bool) {
	tile := mosaicTile(b, size)
	handBack := raster.StepTOANDVI.Def().Recycle // what the step's DoFn calls
	raster.BenchVsCopy(b, size*size, chainBytes, func() {
		out, err := raster.TOANDVI(tile)
		if err != nil {
			b.Fatal(err)
		}
		if recycle {
			handBack(out)
		}
	})
}

// compositeBytes is what the composite moves per pixel: three float32
// reflectances in, four bytes (RGBA) out.
const compositeBytes = 3*4 + 4

// BenchmarkComposite runs the CPU composite (stretch and gamma of bands 4,
// 3, 2 into RGBA) on the reflectance of the committed scene tiled to
// 512x512 and 4096x4096, with the scene's stretch (2-98 percentiles, gamma
// 1.4), and reports it as a ratio to a plain copy of the same number of
// bytes measured in the same run, as BenchmarkTOANDVI does.
func BenchmarkComposite(b *testing.B) {
	for _, size := range []int{512, 4096} {
		b.Run(fmt.Sprintf("tile=%d", size), func(b *testing.B) { benchComposite(b, size) })
	}
}

func benchComposite(b *testing.B, size int) {
	tiles, err := raster.ReadScene(raster.SceneRef{Dir: raster.SampleSceneDir(), TileSize: 64, Bands: []int{2, 3, 4}})
	if err != nil {
		b.Fatal(err)
	}
	src := tiles[0]
	dn := raster.DNTile{Scene: src.Scene, SceneW: size, SceneH: size, Rect: raster.Rect{W: size, H: size},
		SunElevation: src.SunElevation, Cal: src.Cal, DN: make([][]uint16, len(src.DN))}
	for i := range dn.DN {
		dn.DN[i] = make([]uint16, size*size)
		for y := 0; y < size; y++ {
			for x := 0; x < size; x++ {
				dn.DN[i][y*size+x] = src.DN[i][(y%src.H)*src.W+x%src.W]
			}
		}
	}
	refl, err := raster.TOA(dn)
	if err != nil {
		b.Fatal(err)
	}
	// The scene's stretch, as the pipeline's histogram gives it.
	st := raster.Stretch{Scene: refl.Scene, Lo: []float32{0.03, 0.04, 0.06}, Hi: []float32{0.25, 0.2, 0.18}, Gamma: 1.4}
	in := raster.CompositeInput{Tile: refl, Stretch: st}
	raster.BenchVsCopy(b, size*size, compositeBytes, func() {
		if _, err := raster.CompositeTile(in); err != nil {
			b.Fatal(err)
		}
	})
}
