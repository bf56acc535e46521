// Package rasterbeam applies the raster steps in Beam pipelines.
//
// It holds the PTransforms a Landsat pipeline is built from, the Beam
// coders of the tile types (a program that moves raster.Tile values
// between transforms imports it for them, or Beam uses a generic coder),
// and the registration of every DoFn they use.
//
// Each PTransform returns its output and a dead-letter PCollection of
// step.Failure, and resolves its step's implementation (CPU, GPU or stub) at
// construction with the selector of its options (step.Using). The steps
// themselves (CPU code, codecs, kernels and launches) are package raster's,
// which imports no Beam package, so that the GPU executor links none.
package rasterbeam

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

func init() {
	// The tile types carry the bulk of a pipeline's bytes: their coders are
	// the steps' codecs (a header, then the planes as raw arrays).
	beam.RegisterCoder(reflect.TypeOf(raster.DNTile{}), raster.EncodeDNTile, raster.DecodeDNTile)
	beam.RegisterCoder(reflect.TypeOf(raster.Tile{}), raster.EncodeTile, raster.DecodeTile)
	beam.RegisterCoder(reflect.TypeOf(raster.RGBATile{}), raster.EncodeRGBATile, raster.DecodeRGBATile)
	for _, t := range []any{raster.SceneRef{}, raster.SceneScan{}, raster.Window{}, raster.Stretch{}, raster.CompositeInput{}, raster.Histogram{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}

	stepbeam.Register(raster.StepTOA)
	stepbeam.Register(raster.StepNDVI)
	stepbeam.Register(raster.StepTOANDVI)

	register.DoFn4x0[context.Context, raster.SceneRef, func(raster.SceneScan), func(step.Failure)](&scanFn{})
	register.DoFn4x0[context.Context, raster.Window, func(raster.DNTile), func(step.Failure)](&readFn{})
	register.DoFn4x0[string, func(*raster.SceneScan) bool, func(raster.SceneScan), func(step.Failure)](&dedupFn{})
	register.Function2x0(windowsOf)
	register.Function1x2(keyScan)
	register.Emitter1[raster.DNTile]()
	register.Emitter1[raster.SceneScan]()
	register.Emitter1[raster.Window]()
	register.Iter1[raster.SceneScan]()

	register.DoFn5x0[context.Context, raster.Tile, func(*raster.Stretch) bool, func(raster.RGBATile), func(step.Failure)](&compositeFn{})
	register.Emitter1[raster.RGBATile]()
	register.Iter1[raster.Stretch]()
	register.Function1x2(keyByScene)
	register.Combiner3[*raster.Histogram, raster.Tile, raster.Stretch](&raster.HistogramFn{})
	register.Function2x1(dropKey)

	register.DoFn5x0[context.Context, string, func(*raster.Tile) bool, func(raster.Tile), func(step.Failure)](&assembleFn{})
	register.Iter1[raster.Tile]()
	register.Function2x0[raster.Tile, func(string, raster.Tile)](raster.SplitPlanes)
	register.Emitter2[string, raster.Tile]()
}

// Steps are the raster steps these PTransforms apply, for a pipeline's
// backend.Config.Steps (through step.Backends) when it uses them all.
var Steps = []step.Any{raster.StepScan, raster.StepRead, raster.StepTOA, raster.StepNDVI, raster.StepTOANDVI, raster.StepComposite, raster.StepAssemble}

// Read reads each scene of refs (a PCollection of raster.SceneRef) window by
// window and returns its tiles (raster.DNTile) and the scenes or windows
// that could not be read (step.Failure): Scan, then Dedup, then the windows
// redistributed (so that they decode in parallel) and ReadWindows. No
// element holds more than one window of pixels.
func Read(s beam.Scope, refs beam.PCollection, opts ...step.Option) (tiles, failed beam.PCollection) {
	scans, scanFailed := Scan(s, refs, opts...)
	unique, dupFailed := Dedup(s, scans)
	tiles, readFailed := ReadWindows(s, Windows(s, unique), opts...)
	return tiles, beam.Flatten(s, scanFailed, dupFailed, readFailed)
}

// Scan reads the metadata and band headers of each scene of refs and
// returns one raster.SceneScan per scene (no pixels) and the scenes that
// cannot be read.
func Scan(s beam.Scope, refs beam.PCollection, opts ...step.Option) (scans, failed beam.PCollection) {
	s, ex := stepbeam.Scope(s, raster.StepScan, opts...)
	return beam.ParDo2(s, &scanFn{Exec: ex}, refs)
}

// Dedup keeps one scan per product: when several directories hold the same
// product ID, the first directory in sorted order is kept and each other
// one fails with "product X also in DIR".
func Dedup(s beam.Scope, scans beam.PCollection) (unique, failed beam.PCollection) {
	s = s.Scope("dedup")
	return beam.ParDo2(s, &dedupFn{}, beam.GroupByKey(s, beam.ParDo(s, keyScan, scans)))
}

// Windows returns the windows of scans, redistributed so that the runner
// decodes them in parallel.
func Windows(s beam.Scope, scans beam.PCollection) beam.PCollection {
	s = s.Scope("windows")
	return beam.Reshuffle(s, beam.ParDo(s, windowsOf, scans))
}

// ReadWindows decodes each raster.Window into its tiles (raster.DNTile).
func ReadWindows(s beam.Scope, windows beam.PCollection, opts ...step.Option) (tiles, failed beam.PCollection) {
	s, ex := stepbeam.Scope(s, raster.StepRead, opts...)
	return beam.ParDo2(s, &readFn{Exec: ex}, windows)
}

func keyScan(sc raster.SceneScan) (string, raster.SceneScan) { return sc.Scene, sc }

func windowsOf(sc raster.SceneScan, emit func(raster.Window)) {
	for _, w := range sc.Windows {
		emit(w)
	}
}

type scanFn struct {
	stepbeam.Exec[raster.SceneRef, raster.SceneScan]
}

func (f *scanFn) ProcessElement(ctx context.Context, ref raster.SceneRef, emit func(raster.SceneScan), fail func(step.Failure)) {
	if sc, ok := f.Run(ctx, ref, fail); ok {
		emit(sc)
	}
}

type dedupFn struct{}

func (f *dedupFn) ProcessElement(scene string, iter func(*raster.SceneScan) bool, emit func(raster.SceneScan), fail func(step.Failure)) {
	var all []raster.SceneScan
	var sc raster.SceneScan
	for iter(&sc) {
		all = append(all, sc)
		sc = raster.SceneScan{}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Dir < all[j].Dir })
	for i, sc := range all {
		if i == 0 {
			emit(sc)
			continue
		}
		fail(step.Failure{Input: sc.Dir, Step: raster.StepScan.Name(), Key: sc.Dir,
			Reason: fmt.Sprintf("product %s also in %s: a product is processed once, from the first directory in sorted order", scene, all[0].Dir)})
	}
}

type readFn struct {
	stepbeam.Exec[raster.Window, []raster.DNTile]
}

func (f *readFn) ProcessElement(ctx context.Context, w raster.Window, emit func(raster.DNTile), fail func(step.Failure)) {
	if tiles, ok := f.Run(ctx, w, fail); ok {
		for _, t := range tiles {
			emit(t)
		}
	}
}

// ReflectanceTOA turns DN tiles into reflectance tiles with one plane per
// band, "B<n>".
func ReflectanceTOA(s beam.Scope, tiles beam.PCollection, opts ...step.Option) (refl, failed beam.PCollection) {
	return stepbeam.Apply(s, raster.StepTOA, tiles, opts...)
}

// NDVI computes the NDVI of reflectance tiles holding planes B4 and B5;
// each output tile has one plane, "NDVI".
func NDVI(s beam.Scope, refl beam.PCollection, opts ...step.Option) (ndvi, failed beam.PCollection) {
	return stepbeam.Apply(s, raster.StepNDVI, refl, opts...)
}

// ReflectanceAndNDVI turns DN tiles into tiles with one reflectance plane
// per band and, last, the NDVI plane: TOA then NDVI, fused. A pipeline whose
// consumers of out keep no tile past processing it may pass
// step.RecycleOutputs: the step then writes later tiles into the planes of
// those it emitted.
func ReflectanceAndNDVI(s beam.Scope, tiles beam.PCollection, opts ...step.Option) (out, failed beam.PCollection) {
	return stepbeam.Apply(s, raster.StepTOANDVI, tiles, opts...)
}

// Composite makes the true-colour picture of reflectance tiles (planes B4,
// B3, B2): a histogram per scene gives the percentile stretch, applied to
// every tile of the scene. It panics on invalid parameters, as Beam's
// transforms do at construction.
func Composite(s beam.Scope, refl beam.PCollection, p raster.CompositeParams, opts ...step.Option) (rgba, failed beam.PCollection) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		panic(err)
	}
	s, ex := stepbeam.Scope(s, raster.StepComposite, opts...)
	keyed := beam.ParDo(s, keyByScene, refl)
	stretches := beam.ParDo(s, dropKey, beam.CombinePerKey(s, &raster.HistogramFn{Params: p}, keyed))
	return beam.ParDo2(s, &compositeFn{Exec: ex}, refl, beam.SideInput{Input: stretches})
}

func keyByScene(t raster.Tile) (string, raster.Tile) { return t.Scene, t }

func dropKey(_ string, st raster.Stretch) raster.Stretch { return st }

type compositeFn struct {
	stepbeam.Exec[raster.CompositeInput, raster.RGBATile]
	// byScene caches the side input: in the global window it is the same
	// for every element the DoFn instance sees.
	byScene map[string]raster.Stretch
}

func (f *compositeFn) ProcessElement(ctx context.Context, in raster.Tile, stretches func(*raster.Stretch) bool, emit func(raster.RGBATile), fail func(step.Failure)) {
	if f.byScene == nil {
		f.byScene = map[string]raster.Stretch{}
		var st raster.Stretch
		for stretches(&st) {
			f.byScene[st.Scene] = st
		}
	}
	st, ok := f.byScene[in.Scene]
	if !ok {
		fail(step.NewFailure(f.Step, in, errors.New("no stretch computed for the scene")))
		return
	}
	if out, ok := f.Run(ctx, raster.CompositeInput{Tile: in, Stretch: st}, fail); ok {
		emit(out)
	}
}

// AssemblePlanes splits tiles into their planes and reassembles each plane
// of each scene into one whole-scene Tile. Use it at the end of a pipeline,
// where a whole plane is needed (a picture, an array file): the scene is one
// element only from here on.
func AssemblePlanes(s beam.Scope, tiles beam.PCollection, opts ...step.Option) (planes, failed beam.PCollection) {
	s, ex := stepbeam.Scope(s, raster.StepAssemble, opts...)
	grouped := beam.GroupByKey(s, beam.ParDo(s, raster.SplitPlanes, tiles))
	return beam.ParDo2(s, &assembleFn{Exec: ex}, grouped)
}

type assembleFn struct {
	stepbeam.Exec[raster.TileGroup, raster.Tile]
}

func (f *assembleFn) ProcessElement(ctx context.Context, key string, iter func(*raster.Tile) bool, emit func(raster.Tile), fail func(step.Failure)) {
	g := raster.TileGroup{Name: key}
	var t raster.Tile
	for iter(&t) {
		g.Tiles = append(g.Tiles, t)
		t = raster.Tile{}
	}
	if out, ok := f.Run(ctx, g, fail); ok {
		emit(out)
	}
}
