package raster

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepScan is the name of the step that reads a scene's metadata and band
// headers and plans its windows; StepRead the one that decodes windows.
const (
	StepScan = "scan"
	StepRead = "read"
)

func init() {
	step.Register(step.Def{
		Step: backendStep(StepScan, ""),
		Doc:  "read a scene's _MTL.txt and its bands' GeoTIFF headers, check them and plan the windows to decode",
		CPU:  ScanScene,
		Sample: func() any {
			return SceneRef{Dir: SampleSceneDir(), TileSize: 16, Bands: DefaultBands}
		},
	})
	step.Register(step.Def{
		Step:   backendStep(StepRead, ""),
		Doc:    "decode one window of a scene's bands, from the strips or tiles that cover it, into tiles",
		CPU:    ReadWindow,
		Sample: func() any { return sampleWindow() },
	})
	register.DoFn4x0[context.Context, SceneRef, func(SceneScan), func(step.Failure)](&scanFn{})
	register.DoFn4x0[context.Context, Window, func(DNTile), func(step.Failure)](&readFn{})
	register.DoFn4x0[string, func(*SceneScan) bool, func(SceneScan), func(step.Failure)](&dedupFn{})
	register.Function2x0(windowsOf)
	register.Function1x2(keyScan)
	register.Emitter1[DNTile]()
	register.Emitter1[SceneScan]()
	register.Emitter1[Window]()
	register.Emitter1[step.Failure]()
	register.Iter1[SceneScan]()
	beam.RegisterType(reflect.TypeOf((*SceneRef)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*SceneScan)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Window)(nil)).Elem())
}

// sampleWindow is the first window of the committed crop in 16x16 tiles.
func sampleWindow() Window {
	sc, err := ScanScene(SceneRef{Dir: SampleSceneDir(), TileSize: 16, Bands: DefaultBands})
	if err != nil || len(sc.Windows) == 0 {
		return Window{}
	}
	return sc.Windows[0]
}

// Read reads each scene of refs (a PCollection of SceneRef) window by
// window and returns its tiles (DNTile) and the scenes or windows that could
// not be read (step.Failure): Scan, then Dedup, then the windows
// redistributed (so that they decode in parallel) and ReadWindows.
func Read(s beam.Scope, refs beam.PCollection, opts ...step.Option) (tiles, failed beam.PCollection) {
	scans, scanFailed := Scan(s, refs, opts...)
	unique, dupFailed := Dedup(s, scans)
	tiles, readFailed := ReadWindows(s, Windows(s, unique), opts...)
	return tiles, beam.Flatten(s, scanFailed, dupFailed, readFailed)
}

// Scan reads the metadata and band headers of each scene of refs and
// returns one SceneScan per scene (no pixels) and the scenes that cannot be
// read.
func Scan(s beam.Scope, refs beam.PCollection, opts ...step.Option) (scans, failed beam.PCollection) {
	s, ex := step.Scope(s, StepScan, opts...)
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

// ReadWindows decodes each Window into its tiles (DNTile).
func ReadWindows(s beam.Scope, windows beam.PCollection, opts ...step.Option) (tiles, failed beam.PCollection) {
	s, ex := step.Scope(s, StepRead, opts...)
	return beam.ParDo2(s, &readFn{Exec: ex}, windows)
}

func keyScan(sc SceneScan) (string, SceneScan) { return sc.Scene, sc }

func windowsOf(sc SceneScan, emit func(Window)) {
	for _, w := range sc.Windows {
		emit(w)
	}
}

type scanFn struct{ step.Exec }

func (f *scanFn) ProcessElement(ctx context.Context, ref SceneRef, emit func(SceneScan), fail func(step.Failure)) {
	if sc, ok := step.Run[SceneRef, SceneScan](ctx, &f.Exec, ref, fail); ok {
		emit(sc)
	}
}

type dedupFn struct{}

func (f *dedupFn) ProcessElement(scene string, iter func(*SceneScan) bool, emit func(SceneScan), fail func(step.Failure)) {
	var all []SceneScan
	var sc SceneScan
	for iter(&sc) {
		all = append(all, sc)
		sc = SceneScan{}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Dir < all[j].Dir })
	for i, sc := range all {
		if i == 0 {
			emit(sc)
			continue
		}
		fail(step.Failure{Input: sc.Dir, Step: StepScan, Key: sc.Dir,
			Reason: fmt.Sprintf("product %s also in %s: a product is processed once, from the first directory in sorted order", scene, all[0].Dir)})
	}
}

type readFn struct{ step.Exec }

func (f *readFn) ProcessElement(ctx context.Context, w Window, emit func(DNTile), fail func(step.Failure)) {
	if tiles, ok := step.Run[Window, []DNTile](ctx, &f.Exec, w, fail); ok {
		for _, t := range tiles {
			emit(t)
		}
	}
}
