package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"sort"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

func init() {
	register.DoFn4x0[context.Context, raster.Tile, func(string, int), func(step.Failure)](&writeTileFn{})
	register.Function7x0(gatherScene)
	register.DoFn3x0[context.Context, sceneParts, func(Outcome)](&finishFn{})
	register.Emitter1[sceneParts]()
	register.DoFn3x1[context.Context, int, func(*Outcome) bool, error](&writeFailuresFn{})
	register.Combiner3[*raster.SceneStatsAcc, raster.Tile, raster.SceneStats](&raster.StatsCombiner{})
	register.Combiner3[*raster.Histogram, raster.Tile, raster.Stretch](&raster.StretchCombiner{})
	register.Function2x1(sumInts)
	register.Emitter2[string, int]()
	register.Emitter1[Outcome]()
	register.Iter1[raster.SceneScan]()
	register.Iter1[int]()
	register.Iter1[raster.SceneStats]()
	register.Iter1[raster.Stretch]()
	register.Iter1[step.Failure]()
	register.Iter1[Outcome]()
	beam.RegisterType(reflect.TypeOf((*raster.SceneStats)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*raster.SceneStatsAcc)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*raster.Histogram)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Outcome)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*sceneParts)(nil)).Elem())
}

const stepWrite = "write"

var join = jobfiles.Join

func sumInts(a, b int) int { return a + b }

// planeFile is the array file of a plane: reflectance_B4.npy, ndvi.npy.
func planeFile(plane string) string {
	if plane == raster.PlaneNDVI {
		return "ndvi.npy"
	}
	return "reflectance_" + plane + ".npy"
}

// writeTileFn writes each tile's planes into the scene's array files as
// the tile arrives, and emits the pixels written, keyed by scene.
type writeTileFn struct {
	Store store
}

func (f *writeTileFn) ProcessElement(ctx context.Context, t raster.Tile, written func(string, int), fail func(step.Failure)) {
	end, err := jobfiles.BeginWrite(f.Store.RunID)
	if err != nil {
		fail(step.NewFailure(stepWrite, t, err))
		return
	}
	defer end()
	if err := f.Store.writeTile(ctx, t); err != nil {
		fail(step.NewFailure(stepWrite, t, err))
		return
	}
	written(t.Scene, t.Area())
}

// finishFn completes each scene once all its tiles are written: it joins
// the array files (object stores), builds ndvi.png, truecolor.png (through
// the composite step), the preview and the legend from them, writes
// stats.json, and renames everything into place; or, if anything of the
// scene failed, removes what was written. It emits the scene's outcome.
type finishFn struct {
	Store store
	// Composite runs the composite step on strips of the written planes.
	Composite stepbeam.Exec[raster.CompositeInput, raster.RGBATile]

	done, failed beam.Counter
}

func (f *finishFn) Setup() error {
	f.done = beam.NewCounter(stepbeam.Namespace, "scenes_done")
	f.failed = beam.NewCounter(stepbeam.Namespace, "scenes_failed")
	return f.Composite.Setup()
}

// sceneParts is what the pipeline knows of one scene (or one directory
// that failed before it was known as a scene) once all its tiles are
// written: the inputs of finishFn, gathered from CoGroupByKey into one
// element (a CoGroupByKey's output cannot cross a fusion break, and the
// finishing runs the composite step, in its own environment on GPUs).
type sceneParts struct {
	Key      string
	Scans    []raster.SceneScan
	Pixels   int
	Stats    []raster.SceneStats
	Stretch  []raster.Stretch
	Failures []step.Failure
}

func gatherScene(key string, scans func(*raster.SceneScan) bool, pixels func(*int) bool, stats func(*raster.SceneStats) bool,
	stretches func(*raster.Stretch) bool, failures func(*step.Failure) bool, emit func(sceneParts)) {
	p := sceneParts{Key: key}
	var sc raster.SceneScan
	for scans(&sc) {
		p.Scans = append(p.Scans, sc)
		sc = raster.SceneScan{}
	}
	var n int
	for pixels(&n) {
		p.Pixels += n
	}
	var st raster.SceneStats
	for stats(&st) {
		p.Stats = append(p.Stats, st)
		st = raster.SceneStats{}
	}
	var str raster.Stretch
	for stretches(&str) {
		p.Stretch = append(p.Stretch, str)
		str = raster.Stretch{}
	}
	var fl step.Failure
	for failures(&fl) {
		p.Failures = append(p.Failures, fl)
	}
	emit(p)
}

func (f *finishFn) ProcessElement(ctx context.Context, p sceneParts, emit func(Outcome)) {
	key := p.Key
	o := Outcome{Scene: key, Failures: p.Failures}
	found, written := p.Scans, p.Pixels
	end, err := jobfiles.BeginWrite(f.Store.RunID)
	if err != nil {
		o.Failures = append(o.Failures, step.Failure{Input: key, Step: stepWrite, Key: key, Reason: err.Error()})
		f.failed.Inc(ctx, 1)
		emit(o)
		return
	}
	defer end()
	var st raster.SceneStats
	var stretch raster.Stretch
	hasStats, hasStretch := len(p.Stats) == 1, len(p.Stretch) == 1
	if hasStats && hasStretch {
		st, stretch = p.Stats[0], p.Stretch[0]
	}

	switch {
	case len(found) == 0:
		// A directory that could not be scanned, or a duplicate: nothing of
		// it was written.
		if len(o.Failures) == 0 {
			o.Failures = append(o.Failures, step.Failure{Input: key, Step: stepWrite, Key: key, Reason: "no scan and no failure: lost"})
		}
	case len(o.Failures) > 0:
	case written != found[0].SceneW*found[0].SceneH || !hasStats || !hasStretch:
		o.Failures = append(o.Failures, step.Failure{Input: found[0].Dir, Step: stepWrite, Key: key,
			Reason: fmt.Sprintf("incomplete: %d of %d pixels written", written, found[0].SceneW*found[0].SceneH)})
	default:
		names, err := f.finish(ctx, found[0], st, stretch)
		if err != nil {
			o.Failures = append(o.Failures, step.Failure{Input: found[0].Dir, Step: stepWrite, Key: key, Reason: err.Error()})
		}
		o.Written = names
	}
	if len(o.Failures) > 0 && len(found) > 0 {
		// The product failed in this run: its files of an earlier run go
		// too, so that what is in its directory is never older than the
		// summary that says it failed.
		if err := f.Store.cleanup(ctx, key); err != nil {
			o.Failures = append(o.Failures, step.Failure{Input: found[0].Dir, Step: stepWrite, Key: key,
				Reason: "removing the failed scene's partial files: " + err.Error()})
		}
		o.Written = nil
	}
	o.Done = len(o.Failures) == 0
	if o.Done {
		f.done.Inc(ctx, 1)
		addPublished(f.Store.RunID, key)
		slog.Info("landsat: wrote", "scene", key, "files", len(o.Written))
	} else {
		f.failed.Inc(ctx, 1)
	}
	emit(o)
}

// finish writes the scene's pictures and statistics from its array files
// and publishes all its files; it returns their names.
func (f *finishFn) finish(ctx context.Context, sc raster.SceneScan, st raster.SceneStats, stretch raster.Stretch) ([]string, error) {
	w, h := sc.SceneW, sc.SceneH
	var rows []int
	for _, win := range sc.Windows {
		rows = append(rows, win.Rect.Y)
	}
	for _, p := range planeNames {
		if _, ok := st.Plane(p); !ok {
			return nil, fmt.Errorf("no statistics of plane %s", p)
		}
		if err := f.Store.joinPlane(ctx, sc.Scene, planeFile(p), w, h, rows); err != nil {
			return nil, err
		}
	}
	if err := f.pictures(ctx, sc.Scene, w, h, st, stretch); err != nil {
		return nil, err
	}
	if err := writeImagePNG(ctx, f.Store.RunID, f.Store.temp(sc.Scene, "ndvi_legend.png"), raster.NDVILegend()); err != nil {
		return nil, err
	}
	if err := jobfiles.WriteJSON(ctx, f.Store.RunID, f.Store.temp(sc.Scene, "stats.json"), statsJSON(st)); err != nil {
		return nil, err
	}
	if err := f.Store.publish(ctx, sc.Scene, sceneOutputs); err != nil {
		return nil, err
	}
	return append([]string(nil), sceneOutputs...), nil
}

// pictures writes ndvi.png, and truecolor.png with its preview, side by
// side (the NDVI picture in a goroutine: the composite, which updates Beam
// metrics, stays on the bundle's goroutine).
func (f *finishFn) pictures(ctx context.Context, scene string, w, h int, st raster.SceneStats, stretch raster.Stretch) error {
	valid := func(p string) bool { ps, _ := st.Plane(p); return ps.Valid == ps.Pixels }
	open := map[string]*planeRows{}
	defer func() {
		for _, p := range open {
			p.Close()
		}
	}()
	for _, p := range []string{"B2", "B3", "B4", raster.PlaneNDVI} {
		r, err := f.Store.openPlane(ctx, scene, planeFile(p), w, h)
		if err != nil {
			return err
		}
		open[p] = r
	}
	var wg sync.WaitGroup
	var ndviErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		ndviErr = writePNG(ctx, f.Store.RunID, f.Store.temp(scene, "ndvi.png"), ndviImage(open[raster.PlaneNDVI], w, h, valid(raster.PlaneNDVI)))
	}()
	prev := newPreview(w, h)
	var compFailure *step.Failure
	composite := func(in raster.CompositeInput) (raster.RGBATile, error) {
		out, ok := f.Composite.Run(ctx, in, func(fl step.Failure) { compFailure = &fl })
		if !ok {
			return out, fmt.Errorf("composite of %s: %s", compFailure.Input, compFailure.Reason)
		}
		return out, nil
	}
	err := writeTrueColor(ctx, f.Store.RunID, f.Store.temp(scene, "truecolor.png"), scene, open, w, h, valid("B2") && valid("B3") && valid("B4"),
		stretch, composite, prev)
	if err == nil {
		err = writeImagePNG(ctx, f.Store.RunID, f.Store.temp(scene, "truecolor_preview.png"), prev.img)
	}
	wg.Wait()
	return errors.Join(err, ndviErr)
}

// sceneStats is the content of stats.json.
type sceneStats struct {
	Scene       string               `json:"scene"`
	Width       int                  `json:"width"`
	Height      int                  `json:"height"`
	Pixels      int                  `json:"pixels"`
	Reflectance map[string]jsonStats `json:"reflectance"`
	NDVI        *jsonStats           `json:"ndvi"`
}

// jsonStats is PlaneStats with null for the mean, min and max of a plane
// without valid pixels.
type jsonStats struct {
	Pixels int      `json:"pixels"`
	Valid  int      `json:"valid"`
	NoData int      `json:"nodata"`
	Mean   *float64 `json:"mean"`
	Min    *float64 `json:"min"`
	Max    *float64 `json:"max"`
}

func toJSONStats(s raster.PlaneStats) jsonStats {
	num := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return jsonStats{Pixels: s.Pixels, Valid: s.Valid, NoData: s.NoData, Mean: num(s.Mean), Min: num(s.Min), Max: num(s.Max)}
}

func statsJSON(st raster.SceneStats) sceneStats {
	out := sceneStats{Scene: st.Scene, Width: st.SceneW, Height: st.SceneH, Pixels: st.SceneW * st.SceneH, Reflectance: map[string]jsonStats{}}
	for _, p := range st.Planes {
		if p.Plane == raster.PlaneNDVI {
			js := toJSONStats(p)
			out.NDVI = &js
		} else {
			out.Reflectance[p.Plane] = toJSONStats(p)
		}
	}
	return out
}

// writeFailuresFn writes failed.jsonl (one failure a line, sorted) and
// summary.json at the output's root.
type writeFailuresFn struct {
	Output   string
	ScenesIn int
	// Stub lists the steps that ran their stand-ins: their outputs are not results.
	Stub []string
	// Run names the run in summary.json.
	Run runInfo
}

func (f *writeFailuresFn) ProcessElement(ctx context.Context, _ int, iter func(*Outcome) bool) error {
	var failures []step.Failure
	sum := runSummary{Run: f.Run, ScenesIn: f.ScenesIn, Done: []string{}, Failed: []string{}, Stub: len(f.Stub) > 0, StubSteps: f.Stub}
	var o Outcome
	for iter(&o) {
		if o.Done {
			sum.Done = append(sum.Done, o.Scene)
		} else {
			sum.Failed = append(sum.Failed, o.Scene)
		}
		failures = append(failures, o.Failures...)
		o = Outcome{}
	}
	sort.Strings(sum.Done)
	sort.Strings(sum.Failed)
	if err := jobfiles.WriteFailures(ctx, f.Run.ID, f.Output, failures); err != nil {
		return err
	}
	return jobfiles.WriteJSON(ctx, f.Run.ID, join(f.Output, summaryFile), sum)
}

const (
	failedFile  = jobfiles.FailedFile
	summaryFile = "summary.json"
)

// runSummary is summary.json: which scenes were done and which failed, and
// whether stand-ins (stubs) ran in place of real steps.
type runSummary struct {
	Run       runInfo  `json:"run"`
	ScenesIn  int      `json:"scenes_in"`
	Done      []string `json:"done"`
	Failed    []string `json:"failed"`
	Stub      bool     `json:"stub"`
	StubSteps []string `json:"stub_steps,omitempty"`
	// Devices are the GPU executors' per-device counts (batches, bytes,
	// busy time), added by the launching program once the run is done and
	// its metrics are read; absent when no batch ran on an executor.
	Devices []job.DeviceCounts `json:"devices,omitempty"`
}

// runInfo names the run a summary.json belongs to.
type runInfo struct {
	// ID is the run ID, which its temporary files carry.
	ID string `json:"id"`
	// Started is when the run started (RFC 3339, UTC).
	Started string `json:"started,omitempty"`
	// Inputs are the scene directories the run was given.
	Inputs []string `json:"inputs"`
	// Args is the command line, flags included.
	Args []string `json:"args,omitempty"`
}
