package rasterbeam_test

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rasterbeam"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// validNDVI counts a tile's valid NDVI pixels: it reads the tile and keeps
// nothing of it.
func validNDVI(t raster.Tile) int {
	ndvi, err := t.Plane(raster.PlaneNDVI)
	if err != nil {
		return 0
	}
	n := 0
	for _, v := range ndvi {
		if v == v {
			n++
		}
	}
	return n
}

func init() { register.Function1x1(validNDVI) }

// The committed scene in 16x16 tiles through toa_ndvi. The one consumer of
// the tiles keeps none, so the pipeline lets the step write each tile into
// the planes of one it emitted before (step.RecycleOutputs).
func ExampleReflectanceAndNDVI_recycled() {
	p, s := beam.NewPipelineWithRoot()
	refs := beam.Create(s, raster.SceneRef{Dir: raster.SampleSceneDir(), TileSize: 16, Bands: raster.DefaultBands})
	dn, _ := rasterbeam.Read(s, refs)
	tiles, _ := rasterbeam.ReflectanceAndNDVI(s, dn, step.RecycleOutputs())
	valid := stats.Sum(s, beam.ParDo(s, validNDVI, tiles))
	passert.Equals(s, valid, 1681) // every pixel of the 41x41 scene

	res, err := ptest.RunWithMetrics(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if c.Namespace() == stepbeam.Namespace && c.Name() == "toa_ndvi."+stepbeam.MetricRecycled {
			fmt.Println("tiles handed back:", c.Result())
		}
	}
	// Output: tiles handed back: 9
}
