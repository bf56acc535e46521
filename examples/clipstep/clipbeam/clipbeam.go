// Package clipbeam applies the clip step in Beam pipelines.
package clipbeam

import (
	"example.com/clipstep/clip"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/transforms/raster"
	_ "github.com/beamgpu/beamgpu/transforms/raster/rasterbeam" // the coder of raster.Tile
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

func init() { stepbeam.RegisterBound[Bounds](clip.Step) }

// Bounds binds the clip bounds to tiles.
type Bounds struct{ Lo, Hi float32 }

// Bind implements stepbeam.Binder.
func (b Bounds) Bind(t raster.Tile) clip.Input { return clip.Input{Tile: t, Lo: b.Lo, Hi: b.Hi} }

// Clip clips every value of every tile to [lo, hi].
func Clip(s beam.Scope, tiles beam.PCollection, lo, hi float32, opts ...step.Option) (out, failed beam.PCollection) {
	return stepbeam.ApplyBound(s, clip.Step, tiles, Bounds{lo, hi}, opts...)
}
