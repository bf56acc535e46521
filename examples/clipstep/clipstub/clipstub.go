// Package clipstub registers the clip step's stand-in.
//
// The stand-in returns a tile of the input's shape, planes of zeros.
package clipstub

import (
	"example.com/clipstep/clip"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
)

func init() { step.RegisterStub(clip.Step, Clip) }

// Clip is the stand-in.
func Clip(in clip.Input) (raster.Tile, error) {
	out := in.Tile
	out.Data = make([][]float32, len(in.Tile.Data))
	for i := range out.Data {
		out.Data[i] = make([]float32, in.Tile.Area())
	}
	return out, nil
}
