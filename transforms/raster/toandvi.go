package raster

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepTOANDVI is the name of the fused TOA + NDVI step, and GPUOpTOANDVI its
// GPU op: one pass over the DNs that writes every band's reflectance and the
// NDVI, instead of writing the red and near-infrared reflectance and reading
// them back.
const (
	StepTOANDVI  = "toa_ndvi"
	GPUOpTOANDVI = "raster.toa_ndvi"
)

func init() {
	step.Register(step.Def{
		Step:   backendStep(StepTOANDVI, GPUOpTOANDVI),
		Doc:    "TOA reflectance of each band and NDVI (from B4 and B5) in one pass",
		CPU:    TOANDVI,
		Sample: func() any { return sampleDNTile() },
		Random: func(seed uint64) any { return randomDNTile(seed) },
	})
	register.DoFn4x0[context.Context, DNTile, func(Tile), func(step.Failure)](&toaNDVIFn{})
}

// ReflectanceAndNDVI turns DN tiles into tiles with one reflectance plane per
// band ("B<n>") and, last, the NDVI plane: TOA then NDVI, fused.
func ReflectanceAndNDVI(s beam.Scope, tiles beam.PCollection, opts ...step.Option) (out, failed beam.PCollection) {
	s = s.Scope(StepTOANDVI)
	return beam.ParDo2(s, &toaNDVIFn{Exec: step.Resolve(StepTOANDVI, opts...)}, tiles)
}

type toaNDVIFn struct{ step.Exec }

func (f *toaNDVIFn) ProcessElement(ctx context.Context, in DNTile, emit func(Tile), fail func(step.Failure)) {
	if out, ok := step.Run[DNTile, Tile](ctx, &f.Exec, in, fail); ok {
		emit(out)
	}
}

// TOANDVI is the CPU implementation of the toa_ndvi step: TOA, then NDVI
// appended as the last plane. The tile must hold bands 4 and 5.
func TOANDVI(t DNTile) (Tile, error) {
	refl, err := TOA(t)
	if err != nil {
		return Tile{}, err
	}
	ndvi, err := NDVITile(refl)
	if err != nil {
		return Tile{}, err
	}
	refl.Names = append(refl.Names, PlaneNDVI)
	refl.Data = append(refl.Data, ndvi.Data[0])
	return refl, nil
}
