package raster

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepNDVI is the name of the NDVI step, and GPUOpNDVI its GPU op.
const (
	StepNDVI  = "ndvi"
	GPUOpNDVI = "raster.ndvi"
	// PlaneNDVI is the name of the NDVI plane.
	PlaneNDVI = "NDVI"
)

func init() {
	step.Register(step.Def{
		Step: backendStep(StepNDVI, GPUOpNDVI),
		Doc:  "NDVI = (B5 - B4) / (B5 + B4) from reflectance tiles, NaN where undefined",
		CPU:  NDVITile,
		Sample: func() any {
			t, _ := TOA(sampleDNTile())
			return t
		},
		Random: func(seed uint64) any {
			t, _ := TOA(randomDNTile(seed)) // NaN where DN is 0
			t.Data[2][0] = -t.Data[3][0]    // one zero sum
			return t
		},
	})
	register.DoFn4x0[context.Context, Tile, func(Tile), func(step.Failure)](&ndviFn{})
}

// NDVI computes the normalised difference vegetation index of reflectance
// tiles holding planes B4 (red) and B5 (near infrared); each output tile has
// one plane, "NDVI".
func NDVI(s beam.Scope, refl beam.PCollection, opts ...step.Option) (ndvi, failed beam.PCollection) {
	s, ex := step.Scope(s, StepNDVI, opts...)
	return beam.ParDo2(s, &ndviFn{Exec: ex}, refl)
}

type ndviFn struct{ step.Exec }

func (f *ndviFn) ProcessElement(ctx context.Context, in Tile, emit func(Tile), fail func(step.Failure)) {
	if out, ok := step.Run[Tile, Tile](ctx, &f.Exec, in, fail); ok {
		emit(out)
	}
}

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
