package raster

import "github.com/beamgpu/beamgpu/transforms/step"

// PlaneNDVI is the name of the NDVI plane.
const PlaneNDVI = "NDVI"

// StepNDVI is the NDVI step: reflectance tiles holding planes B4 (red) and B5
// (near infrared) to tiles with one plane, "NDVI".
var StepNDVI = step.Register(step.Def[Tile, Tile]{
	Name: "ndvi",
	Doc:  "NDVI = (B5 - B4) / (B5 + B4) from reflectance tiles, NaN where undefined",
	CPU:  NDVITile,
	GPU: &step.GPU[Tile, Tile]{Op: "raster.ndvi", Hints: gpuHints, In: TileCodec, Out: TileCodec,
		Split: splitTile, Merge: mergeTiles},
	Sample: func() Tile {
		t, _ := TOA(sampleDNTile())
		return t
	},
	Random: func(seed uint64) Tile {
		t, _ := TOA(randomDNTile(seed)) // NaN where DN is 0
		t.Data[2][0] = -t.Data[3][0]    // one zero sum
		return t
	},
})

// NDVITile is the CPU implementation of the NDVI step.
func NDVITile(t Tile) (Tile, error) {
	if err := checkPlanes(t.ID(), t.Rect, t.Data); err != nil {
		return Tile{}, err
	}
	red, err := t.Plane(BandName(4))
	if err != nil {
		return Tile{}, err
	}
	nir, err := t.Plane(BandName(5))
	if err != nil {
		return Tile{}, err
	}
	out := Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect,
		Names: []string{PlaneNDVI}, Data: [][]float32{make([]float32, len(red))}}
	ndviPlane(out.Data[0], red, nir)
	return out, nil
}

// ndviPlane is the per-pixel kernel. NaN inputs propagate; a zero sum gives NaN.
func ndviPlane(dst, red, nir []float32) {
	dst = dst[:len(red)]
	nir = nir[:len(red)]
	for i, r := range red {
		n := nir[i]
		sum := n + r
		if sum == 0 {
			dst[i] = nan32
			continue
		}
		dst[i] = (n - r) / sum
	}
}
