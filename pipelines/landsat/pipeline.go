package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rasterbeam"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// Config is one run of the pipeline.
type Config struct {
	// Scenes are the scene directories to process.
	Scenes []string
	// Output is the directory that receives one subdirectory per scene,
	// failed.jsonl and summary.json.
	Output string
	// TileSize is the side of the square tiles scenes are split into (on
	// object stores, the height of the full-width row strips).
	TileSize  int
	Composite raster.CompositeParams
	// Steps are passed to every step (the backend selector).
	Steps []step.Option
	// RunID names this run's temporary files; empty: a random one.
	RunID string
	// Started is when the run started, and Args its command line, for
	// summary.json.
	Started time.Time
	Args    []string
	// Stub lists the steps that run their stand-ins (for summary.json).
	Stub []string
}

// pipelineSteps are the steps Build builds, in their order: what --help,
// --backend_override and the explain report know.
var pipelineSteps = []step.Any{raster.StepScan, raster.StepRead, raster.StepTOANDVI, raster.StepComposite}

// The files written for each scene, under Output/<product ID>/.
var sceneOutputs = []string{
	"reflectance_B2.npy", "reflectance_B3.npy", "reflectance_B4.npy", "reflectance_B5.npy",
	"ndvi.npy", "ndvi.png", "ndvi_legend.png", "truecolor.png", "truecolor_preview.png", "stats.json",
}

// planeNames are the planes of the toa_ndvi step's tiles, each written as an array file.
var planeNames = []string{"B2", "B3", "B4", "B5", raster.PlaneNDVI}

// Build adds the pipeline to s and returns the per-scene outcomes.
//
//	scene dirs -> scan (MTL, band headers; one scan per product) -> windows, redistributed
//	  -> read (decode a window into tiles) -> toa_ndvi (reflectance B2-B5 and NDVI, one pass)
//	       |-> write each tile into the scene's .npy files (at offsets, or as row strips on object stores)
//	       |-> statistics (a combiner) and the percentile stretch (a histogram combiner)
//	  -> per scene, once all its tiles are written: pictures from the written planes (composite step),
//	     stats.json, files renamed into place; or, on any failure, its files removed
//	failures of every step -> per-scene outcome -> failed.jsonl, summary.json
//
// Tiles flow from the read step to the writes in one fused stage: no step
// holds a scene's planes, and the runner keeps no tile once it is written.
func Build(s beam.Scope, cfg Config) (outcomes beam.PCollection) {
	if cfg.RunID == "" {
		cfg.RunID = newRunID()
	}
	st := store{Output: cfg.Output, RunID: cfg.RunID}
	refs := make([]raster.SceneRef, len(cfg.Scenes))
	for i, d := range cfg.Scenes {
		refs[i] = raster.SceneRef{Dir: d, TileSize: cfg.TileSize, Bands: raster.DefaultBands, RowStrips: st.objects()}
	}
	scenes, linkFailed := beam.ParDo2(s.Scope("links"), refuseLinks, beam.CreateList(s, refs))

	scans, scanFailed := rasterbeam.Scan(s, scenes, cfg.Steps...)
	unique, dupFailed := rasterbeam.Dedup(s, scans)
	unique, reservedFailed := beam.ParDo2(s.Scope("reserved"), &refuseSceneFn{Output: cfg.Output}, unique)
	dn, readFailed := rasterbeam.ReadWindows(s, rasterbeam.Windows(s, unique), cfg.Steps...)
	// The tiles' consumers below (the writes, keyTile and the two
	// combiners) keep no tile past processing it, so the step may reuse a
	// tile's planes for the next once it is emitted (step.RecycleOutputs).
	// A consumer added here that keeps tiles must drop the option.
	tiles, toaFailed := rasterbeam.ReflectanceAndNDVI(s, dn, append(slices.Clip(cfg.Steps), step.RecycleOutputs())...)

	ws := s.Scope("write")
	written, writeFailed := beam.ParDo2(ws, &writeTileFn{Store: st}, tiles)
	pixels := beam.CombinePerKey(ws, sumInts, written)
	keyed := beam.ParDo(ws, keyTile, tiles)
	stats := beam.CombinePerKey(ws, &raster.StatsCombiner{}, keyed)
	stretch := beam.CombinePerKey(ws, &raster.StretchCombiner{Params: cfg.Composite}, keyed)

	failed := beam.Flatten(s, linkFailed, scanFailed, dupFailed, reservedFailed, readFailed, toaFailed, writeFailed)
	fs := s.Scope("finish")
	grouped := beam.CoGroupByKey(fs, beam.ParDo(fs, keyScan, unique), pixels, stats, stretch, beam.ParDo(fs, keyFailure, failed))
	parts := beam.ParDo(fs, gatherScene, grouped)
	// The finishing runs in the composite step's scope: on the GPU, its
	// environment (right fitting), where the composite's strips are.
	cs, composite := stepbeam.Scope(s, raster.StepComposite, cfg.Steps...)
	outcomes = beam.ParDo(cs, &finishFn{Store: st, Composite: composite}, parts)

	osc := s.Scope("outcome")
	run := runInfo{ID: cfg.RunID, Inputs: cfg.Scenes, Args: cfg.Args}
	if !cfg.Started.IsZero() {
		run.Started = cfg.Started.UTC().Format(time.RFC3339)
	}
	beam.ParDo0(osc, &writeFailuresFn{Output: cfg.Output, ScenesIn: len(cfg.Scenes), Stub: cfg.Stub, Run: run},
		beam.GroupByKey(osc, beam.AddFixedKey(osc, outcomes)))
	return outcomes
}

func init() {
	register.Function1x2(keyTile)
	register.Function1x2(keyScan)
	register.Function1x2(keyFailure)
	register.DoFn3x0[raster.SceneScan, func(raster.SceneScan), func(step.Failure)](&refuseSceneFn{})
	register.Function3x0(refuseLinks)
	register.Emitter1[raster.SceneRef]()
}

// reservedNames are the names of the run's own files at the root of the
// output directory: a product ID equal to one (summary.json) would make a
// directory of that name, and the run could not write its report.
var reservedNames = []string{summaryFile, failedFile}

// refuseSceneFn fails a scene whose product ID is a reserved name
// (compared without case: some filesystems ignore it), and a scene whose
// products would be written into its own directory (--output the scene
// directory's parent, and the product ID its name): a run never writes
// among, or removes, its inputs.
type refuseSceneFn struct {
	Output string
}

func (f *refuseSceneFn) ProcessElement(sc raster.SceneScan, emit func(raster.SceneScan), fail func(step.Failure)) {
	refuse := func(reason string) {
		fail(step.Failure{Input: sc.Dir, Step: raster.StepScan.Name(), Key: sc.Dir, Reason: reason})
	}
	for _, n := range reservedNames {
		if strings.EqualFold(sc.Scene, n) {
			refuse(fmt.Sprintf("product ID %q is a name the run reserves for its own files (%s): refused", sc.Scene, strings.Join(reservedNames, ", ")))
			return
		}
	}
	if !strings.Contains(f.Output, "://") && !strings.Contains(sc.Dir, "://") {
		products := join(f.Output, sc.Scene)
		a, errA := os.Stat(sc.Dir)
		b, errB := os.Stat(products)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			refuse(fmt.Sprintf("its products would be written into its own directory (--output %s, product %s): refused, a run never writes among its inputs; choose another --output", f.Output, sc.Scene))
			return
		}
	}
	emit(sc)
}

// refuseLinks fails a scene directory that is a symlink the run cannot
// follow to a directory: dangling, a loop, unreadable, a link to a file, or
// a link to a directory that holds it (a cycle); each with the reason, so
// that no scene is dropped without a line in failed.jsonl. A link to a
// scene directory elsewhere is followed, as a directory is.
func refuseLinks(ref raster.SceneRef, emit func(raster.SceneRef), fail func(step.Failure)) {
	if reason := linkProblem(ref.Dir); reason != "" {
		fail(step.Failure{Input: ref.Dir, Step: raster.StepScan.Name(), Key: ref.Dir, Reason: reason})
		return
	}
	emit(ref)
}

// linkProblem says why the scene directory dir, if a symlink, cannot be
// taken as a scene ("" if it can, or is no symlink).
func linkProblem(dir string) string {
	if strings.Contains(dir, "://") {
		return ""
	}
	fi, err := os.Lstat(dir)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return "" // not a link: the scan says what is wrong with it
	}
	target, _ := os.Readlink(dir)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Sprintf("symlink to %s: a loop of symlinks, refused", target)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("dangling symlink to %s: nothing there", target)
	case err != nil:
		return fmt.Sprintf("symlink to %s cannot be followed: %v", target, err)
	case !st.IsDir():
		return fmt.Sprintf("symlink to %s, which is not a directory", target)
	}
	real, err1 := filepath.EvalSymlinks(dir)
	parent, err2 := filepath.EvalSymlinks(filepath.Dir(dir))
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("symlink to %s cannot be resolved: %v", target, errors.Join(err1, err2))
	}
	if rel, err := filepath.Rel(real, parent); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return fmt.Sprintf("symlink to %s, a directory that holds it (a cycle): refused", target)
	}
	return ""
}

func keyTile(t raster.Tile) (string, raster.Tile) { return t.Scene, t }

func keyScan(sc raster.SceneScan) (string, raster.SceneScan) { return sc.Scene, sc }

func keyFailure(f step.Failure) (string, step.Failure) { return f.Key, f }

// newRunID is a random name for a run's temporary files.
func newRunID() string { return jobfiles.NewRunID() }

// Outcome is what became of one scene.
type Outcome struct {
	Scene    string
	Done     bool
	Written  []string
	Failures []step.Failure
}

// discoverScenes returns the scene directories of input: input itself if it
// holds a *_MTL.txt, else each of its subdirectories (a subdirectory that is
// not a scene fails in the read step and is reported, not skipped). A
// symlink among them counts as a subdirectory when it leads to one, and
// also when it cannot be followed (dangling, a loop, unreadable): such a
// scene fails with the reason (refuseLinks), never dropped. Hidden entries
// and files are not scenes.
// Inputs with a scheme (gs://...) are listed through Beam's filesystems,
// except in a plan (--plan_out), which lists nothing remote so that it needs
// no credentials: it takes --input as one scene.
func discoverScenes(input string) ([]string, error) {
	if strings.Contains(input, "://") {
		if flags.Launch.PlanOut != "" {
			slog.Info("landsat: plan: --input " + input + " is not listed (no credentials needed); a submission lists it")
			return []string{strings.TrimSuffix(input, "/")}, nil
		}
		return discoverRemoteScenes(context.Background(), input)
	}
	if m, _ := filepath.Glob(filepath.Join(input, "*_MTL.txt")); len(m) > 0 {
		return []string{input}, nil
	}
	entries, err := os.ReadDir(input)
	if err != nil {
		return nil, fmt.Errorf("--input %s: %w", input, err)
	}
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(input, e.Name())
		switch {
		case e.IsDir():
			dirs = append(dirs, path)
		case e.Type()&fs.ModeSymlink != 0:
			// DirEntry describes the link itself: follow it.
			if st, err := os.Stat(path); err != nil || st.IsDir() {
				dirs = append(dirs, path)
			}
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("--input %s: neither a scene directory (no *_MTL.txt) nor a directory of scene directories", input)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// discoverRemoteScenes is discoverScenes for an object store, which has
// objects, not directories: the scene "directories" are the first path
// parts under input of its objects. Object stores differ on whether * spans
// a "/" (Cloud Storage's does), so both levels are listed and the results
// sorted out by their relative paths.
func discoverRemoteScenes(ctx context.Context, input string) ([]string, error) {
	base := strings.TrimSuffix(input, "/")
	fsys, err := filesystem.New(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("--input %s: %w", input, err)
	}
	defer fsys.Close()
	var objects []string
	for _, glob := range []string{base + "/*", base + "/*/*"} {
		got, err := fsys.List(ctx, glob)
		if err != nil {
			return nil, fmt.Errorf("--input %s: listing %s: %w", input, glob, err)
		}
		objects = append(objects, got...)
	}
	seen := map[string]bool{}
	var dirs []string
	for _, o := range objects {
		rel, ok := strings.CutPrefix(o, base+"/")
		if !ok {
			continue
		}
		first, rest, nested := strings.Cut(rel, "/")
		if !nested {
			if strings.HasSuffix(first, "_MTL.txt") {
				return []string{base}, nil
			}
			continue
		}
		if rest != "" && !strings.HasPrefix(first, ".") && !seen[first] {
			seen[first] = true
			dirs = append(dirs, base+"/"+first)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("--input %s: neither a scene (no *_MTL.txt) nor a prefix of scenes", input)
	}
	sort.Strings(dirs)
	return dirs, nil
}
