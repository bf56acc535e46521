package raster

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepTOA is the name of the TOA reflectance step, and GPUOpTOA its GPU op.
const (
	StepTOA  = "toa"
	GPUOpTOA = "raster.toa"
)

func init() {
	step.Register(step.Def{
		Step:   backendStep(StepTOA, GPUOpTOA),
		Doc:    "top-of-atmosphere reflectance of each band, NaN where DN is 0",
		CPU:    TOA,
		Sample: func() any { return sampleDNTile() },
	})
	register.DoFn4x0[context.Context, DNTile, func(Tile), func(step.Failure)](&toaFn{})
	register.Emitter1[Tile]()
	beam.RegisterType(reflect.TypeOf((*DNTile)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Tile)(nil)).Elem())
}

// ReflectanceTOA turns DN tiles into reflectance tiles with one plane per
// band, named "B<n>".
func ReflectanceTOA(s beam.Scope, tiles beam.PCollection, opts ...step.Option) (refl, failed beam.PCollection) {
	s = s.Scope(StepTOA)
	return beam.ParDo2(s, &toaFn{Exec: step.Resolve(StepTOA, opts...)}, tiles)
}

type toaFn struct{ step.Exec }

func (f *toaFn) ProcessElement(ctx context.Context, in DNTile, emit func(Tile), fail func(step.Failure)) {
	if out, ok := step.Run[DNTile, Tile](ctx, &f.Exec, in, fail); ok {
		emit(out)
	}
}

// TOA is the CPU implementation of the TOA step:
// (Mult*DN + Add) / sin(SunElevation) per pixel, computed in float64 and
// rounded to float32, with NaN where DN is 0 (no-data).
func TOA(t DNTile) (Tile, error) {
	if err := checkPlanes(t.ID(), t.Rect, t.DN); err != nil {
		return Tile{}, err
	}
	if len(t.Cal) != len(t.DN) {
		return Tile{}, fmt.Errorf("%s: %d calibrations for %d bands", t.ID(), len(t.Cal), len(t.DN))
	}
	if !(t.SunElevation > 0 && t.SunElevation <= 90) {
		return Tile{}, fmt.Errorf("%s: sun elevation %g: want (0, 90] degrees", t.ID(), t.SunElevation)
	}
	sin := math.Sin(t.SunElevation * math.Pi / 180)
	out := Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect,
		Names: make([]string, len(t.DN)), Data: make([][]float32, len(t.DN))}
	for i, dn := range t.DN {
		out.Names[i] = BandName(t.Cal[i].Band)
		out.Data[i] = make([]float32, len(dn))
		toaPlane(out.Data[i], dn, t.Cal[i].Mult/sin, t.Cal[i].Add/sin)
	}
	return out, nil
}

// toaPlane is the per-pixel kernel: dst = scale*dn + offset, NaN for dn 0.
func toaPlane(dst []float32, dn []uint16, scale, offset float64) {
	dst = dst[:len(dn)]
	for i, v := range dn {
		if v == 0 {
			dst[i] = nan32
			continue
		}
		dst[i] = float32(float64(v)*scale + offset)
	}
}

// BandName is the plane name of band n: "B4".
func BandName(n int) string { return fmt.Sprintf("B%d", n) }

// sampleDNTile is a small real tile: the top-left 16x16 of the committed
// crop, or synthetic DNs with the crop's coefficients when it is absent.
func sampleDNTile() DNTile {
	if tiles, err := ReadScene(SceneRef{Dir: SampleSceneDir(), TileSize: 16, Bands: DefaultBands}); err == nil {
		return tiles[0]
	}
	t := DNTile{Scene: SampleSceneID, SceneW: 16, SceneH: 16, Rect: Rect{W: 16, H: 16}, SunElevation: 58.99675180}
	for _, b := range DefaultBands {
		t.Cal = append(t.Cal, Calibration{Band: b, Mult: 2e-5, Add: -0.1})
		p := make([]uint16, 256)
		for i := range p {
			p[i] = uint16(7000 + 13*i*b)
		}
		t.DN = append(t.DN, p)
	}
	return t
}
