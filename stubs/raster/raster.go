// Package raster registers the stand-ins of the raster steps
// (github.com/beamgpu/beamgpu/transforms/raster); see package stubs for the
// contract they follow.
package raster

import (
	rs "github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
)

func init() {
	step.RegisterStub(rs.StepRead, rs.ReadSceneHeaders)
	step.RegisterStub(rs.StepTOA, TOA)
	step.RegisterStub(rs.StepNDVI, NDVI)
	step.RegisterStub(rs.StepTOANDVI, TOANDVI)
	step.RegisterStub(rs.StepComposite, Composite)
	step.RegisterStub(rs.StepAssemble, Assemble)
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
