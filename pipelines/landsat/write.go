package main

import (
	"context"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"math"
	"reflect"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/internal/job"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/sbinet/npyio/npy"
)

func init() {
	register.DoFn5x0[context.Context, raster.Tile, func(raster.PlaneStats), func(string, string), func(step.Failure)](&writePlaneFn{})
	register.DoFn5x0[context.Context, string, func(*raster.RGBATile) bool, func(string, string), func(step.Failure)](&writePictureFn{})
	register.DoFn5x0[context.Context, string, func(*raster.PlaneStats) bool, func(string, string), func(step.Failure)](&writeStatsFn{})
	register.DoFn5x0[context.Context, string, func(*string) bool, func(*step.Failure) bool, func(Outcome)](&outcomeFn{})
	register.DoFn3x1[context.Context, int, func(*Outcome) bool, error](&writeFailuresFn{})
	register.Emitter1[raster.PlaneStats]()
	register.Emitter2[string, string]()
	register.Emitter1[Outcome]()
	register.Iter1[raster.RGBATile]()
	register.Iter1[raster.PlaneStats]()
	register.Iter1[string]()
	register.Iter1[step.Failure]()
	register.Iter1[Outcome]()
	beam.RegisterType(reflect.TypeOf((*raster.PlaneStats)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Outcome)(nil)).Elem())
}

const stepWrite = "write"

var join = job.Join

func writeNPY(ctx context.Context, path string, t raster.Tile) error {
	rows := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(t.W, reflect.TypeFor[float32]())), t.H, t.H)
	for y := 0; y < t.H; y++ {
		reflect.Copy(rows.Index(y), reflect.ValueOf(t.Data[0][y*t.W:(y+1)*t.W]))
	}
	return job.WriteFile(ctx, path, func(w io.Writer) error { return npy.Write(w, rows.Interface()) })
}

// planeFile is the array file of a plane: reflectance_B4.npy, ndvi.npy.
func planeFile(plane string) string {
	if plane == raster.PlaneNDVI {
		return "ndvi.npy"
	}
	return "reflectance_" + plane + ".npy"
}

// writePlaneFn writes a whole-scene plane as .npy (and NDVI as a picture),
// and emits its statistics and the names of the files written.
type writePlaneFn struct {
	Output string
}

func (f *writePlaneFn) ProcessElement(ctx context.Context, t raster.Tile, stats func(raster.PlaneStats), written func(string, string), fail func(step.Failure)) {
	plane := t.Names[0]
	failWith := func(err error) { fail(step.NewFailure(stepWrite, t, err)) }
	name := planeFile(plane)
	if err := writeNPY(ctx, join(f.Output, t.Scene, name), t); err != nil {
		failWith(err)
		return
	}
	written(t.Scene, name)
	if plane == raster.PlaneNDVI {
		img, err := raster.NDVIImage(t)
		if err == nil {
			err = job.WriteFile(ctx, join(f.Output, t.Scene, "ndvi.png"), func(w io.Writer) error { return png.Encode(w, img) })
		}
		if err != nil {
			failWith(err)
			return
		}
		written(t.Scene, "ndvi.png")
	}
	stats(raster.Stats(t))
	slog.Info("landsat: wrote", "scene", t.Scene, "plane", plane, "pixels", t.Area())
}

// writePictureFn assembles a scene's composite tiles into truecolor.png.
type writePictureFn struct {
	Output string
}

func (f *writePictureFn) ProcessElement(ctx context.Context, scene string, iter func(*raster.RGBATile) bool, written func(string, string), fail func(step.Failure)) {
	var tiles []raster.RGBATile
	var t raster.RGBATile
	for iter(&t) {
		tiles = append(tiles, t)
		t = raster.RGBATile{}
	}
	img, err := raster.AssembleRGBA(tiles)
	if err == nil {
		err = job.WriteFile(ctx, join(f.Output, scene, "truecolor.png"), func(w io.Writer) error { return png.Encode(w, img) })
	}
	if err != nil {
		fail(step.Failure{Input: scene + "/truecolor.png", Step: stepWrite, Reason: err.Error(), Key: scene})
		return
	}
	written(scene, "truecolor.png")
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
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return jsonStats{Pixels: s.Pixels, Valid: s.Valid, NoData: s.NoData, Mean: num(s.Mean), Min: num(s.Min), Max: num(s.Max)}
}

// writeStatsFn writes a scene's stats.json once all its planes are counted.
type writeStatsFn struct {
	Output string
}

func (f *writeStatsFn) ProcessElement(ctx context.Context, scene string, iter func(*raster.PlaneStats) bool, written func(string, string), fail func(step.Failure)) {
	out := sceneStats{Scene: scene, Reflectance: map[string]jsonStats{}}
	var st raster.PlaneStats
	for iter(&st) {
		out.Width, out.Height, out.Pixels = st.Width, st.Height, st.Pixels
		if st.Plane == raster.PlaneNDVI {
			js := toJSONStats(st)
			out.NDVI = &js
		} else {
			out.Reflectance[st.Plane] = toJSONStats(st)
		}
	}
	path := join(f.Output, scene, "stats.json")
	if err := job.WriteJSON(ctx, path, out); err != nil {
		fail(step.Failure{Input: path, Step: stepWrite, Reason: err.Error(), Key: scene})
		return
	}
	written(scene, "stats.json")
}

// outcomeFn decides, per scene, whether it is done (every output written and
// no failure) or failed, and counts both.
type outcomeFn struct {
	Expected int

	done, failed beam.Counter
}

func (f *outcomeFn) Setup() {
	f.done = beam.NewCounter(stepbeam.Namespace, "scenes_done")
	f.failed = beam.NewCounter(stepbeam.Namespace, "scenes_failed")
}

func (f *outcomeFn) ProcessElement(ctx context.Context, scene string, written func(*string) bool, failures func(*step.Failure) bool, emit func(Outcome)) {
	o := Outcome{Scene: scene}
	var name string
	for written(&name) {
		o.Written = append(o.Written, name)
	}
	var fl step.Failure
	for failures(&fl) {
		o.Failures = append(o.Failures, fl)
	}
	sort.Strings(o.Written)
	if len(o.Failures) == 0 && len(o.Written) != f.Expected {
		o.Failures = append(o.Failures, step.Failure{Input: scene, Step: stepWrite, Key: scene,
			Reason: fmt.Sprintf("incomplete: wrote %d of %d outputs (%v)", len(o.Written), f.Expected, o.Written)})
	}
	o.Done = len(o.Failures) == 0
	if o.Done {
		f.done.Inc(ctx, 1)
	} else {
		f.failed.Inc(ctx, 1)
	}
	emit(o)
}

// writeFailuresFn writes failed.jsonl (one failure a line, sorted) and
// summary.json at the output's root.
type writeFailuresFn struct {
	Output   string
	ScenesIn int
}

func (f *writeFailuresFn) ProcessElement(ctx context.Context, _ int, iter func(*Outcome) bool) error {
	var failures []step.Failure
	sum := runSummary{ScenesIn: f.ScenesIn, Done: []string{}, Failed: []string{}}
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
	if err := job.WriteFailures(ctx, f.Output, failures); err != nil {
		return err
	}
	return job.WriteJSON(ctx, join(f.Output, summaryFile), sum)
}

const (
	failedFile  = job.FailedFile
	summaryFile = "summary.json"
)

// runSummary is summary.json: which scenes were done and which failed.
type runSummary struct {
	ScenesIn int      `json:"scenes_in"`
	Done     []string `json:"done"`
	Failed   []string `json:"failed"`
}
