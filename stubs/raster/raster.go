// Package raster registers the stand-ins of the raster steps.
//
// The steps are package transforms/raster's; see package stubs for the
// contract the stand-ins follow.
package raster

import (
	rs "github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
)

func init() {
	step.RegisterStub(rs.StepScan, rs.ScanScene)
	step.RegisterStub(rs.StepRead, ReadWindow)
	step.RegisterStub(rs.StepTOA, TOA)
	step.RegisterStub(rs.StepNDVI, NDVI)
	step.RegisterStub(rs.StepTOANDVI, TOANDVI)
	step.RegisterStub(rs.StepComposite, Composite)
	step.RegisterStub(rs.StepAssemble, Assemble)
}

// ReadWindow is the read step's stand-in: the window's tiles with zero DNs,
// nothing decoded. (The scan step's stand-in is the scan itself: it reads
// only metadata and headers, which give the outputs their real shape.)
func ReadWindow(w rs.Window) ([]rs.DNTile, error) {
	rects, err := w.TileRects()
	if err != nil {
		return nil, err
	}
	out := make([]rs.DNTile, len(rects))
	for i, r := range rects {
		out[i] = rs.DNTile{Scene: w.Scene, SceneW: w.SceneW, SceneH: w.SceneH, Rect: r, SunElevation: w.SunElevation,
			Cal: w.Cal, DN: make([][]uint16, len(w.Bands))}
		for b := range w.Bands {
			out[i].DN[b] = make([]uint16, r.Area())
		}
	}
	return out, nil
}

// TOA is the TOA step's stand-in: one zero plane per band, named as the
// real step names them.
func TOA(t rs.DNTile) (rs.Tile, error) {
	out := rs.Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect}
	for _, c := range t.Cal {
		out.Names = append(out.Names, rs.BandName(c.Band))
		out.Data = append(out.Data, make([]float32, t.Area()))
	}
	return out, nil
}

// TOANDVI is the toa_ndvi step's stand-in: the TOA stand-in's planes and a
// zero NDVI plane.
func TOANDVI(t rs.DNTile) (rs.Tile, error) {
	out, _ := TOA(t)
	out.Names = append(out.Names, rs.PlaneNDVI)
	out.Data = append(out.Data, make([]float32, t.Area()))
	return out, nil
}

// NDVI is the NDVI step's stand-in: one zero plane named NDVI.
func NDVI(t rs.Tile) (rs.Tile, error) {
	out := rs.Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect,
		Names: []string{rs.PlaneNDVI}, Data: [][]float32{make([]float32, t.Area())}}
	return out, nil
}

// Composite is the composite step's stand-in: a transparent black picture of
// the tile's size.
func Composite(in rs.CompositeInput) (rs.RGBATile, error) {
	t := in.Tile
	return rs.RGBATile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect,
		Pix: make([]uint8, 4*t.Area())}, nil
}

// Assemble is the assemble step's stand-in: a zero whole-scene plane with
// the tiles' plane name.
func Assemble(g rs.TileGroup) (rs.Tile, error) {
	if len(g.Tiles) == 0 {
		return rs.Tile{}, nil
	}
	t := g.Tiles[0]
	return rs.Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH,
		Rect: rs.Rect{W: t.SceneW, H: t.SceneH}, Names: t.Names[:1:1],
		Data: [][]float32{make([]float32, t.SceneW*t.SceneH)}}, nil
}
