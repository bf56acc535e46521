package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rasterbeam"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Config is one run of the pipeline.
type Config struct {
	// Scenes are the scene directories to process.
	Scenes []string
	// Output is the directory that receives one subdirectory per scene,
	// failed.jsonl and summary.json.
	Output string
	// TileSize is the side of the square tiles scenes are split into.
	TileSize  int
	Composite raster.CompositeParams
	// Steps are passed to every step (the backend selector).
	Steps []step.Option
}

// pipelineSteps are the steps Build builds, in their order: what --help,
// --backend_override and the explain report know.
var pipelineSteps = []step.Any{raster.StepRead, raster.StepTOANDVI, raster.StepComposite, raster.StepAssemble}

// The files written for each scene, under Output/<product ID>/.
var sceneOutputs = []string{
	"reflectance_B2.npy", "reflectance_B3.npy", "reflectance_B4.npy", "reflectance_B5.npy",
	"ndvi.npy", "ndvi.png", "truecolor.png", "stats.json",
}

// Build adds the pipeline to s and returns the per-scene outcomes.
//
//	scene dirs -> read (tiles of DNs) -> toa_ndvi (reflectance B2-B5 and NDVI, one pass)
//	                                       |-> assemble (per plane) -> .npy, ndvi.png, stats.json
//	                                       '-> composite -----------> truecolor.png
//	failures of every step -> per-scene outcome -> failed.jsonl
func Build(s beam.Scope, cfg Config) (outcomes beam.PCollection) {
	refs := make([]raster.SceneRef, len(cfg.Scenes))
	for i, d := range cfg.Scenes {
		refs[i] = raster.SceneRef{Dir: d, TileSize: cfg.TileSize, Bands: raster.DefaultBands}
	}
	scenes := beam.CreateList(s, refs)

	dn, readFailed := rasterbeam.Read(s, scenes, cfg.Steps...)
	tiles, toaFailed := rasterbeam.ReflectanceAndNDVI(s, dn, cfg.Steps...)
	rgba, compFailed := rasterbeam.Composite(s, tiles, cfg.Composite, cfg.Steps...)
	planes, asmFailed := rasterbeam.AssemblePlanes(s, tiles, cfg.Steps...)

	ws := s.Scope("write")
	stats, planeWritten, planeFailed := beam.ParDo3(ws, &writePlaneFn{Output: cfg.Output}, planes)
	picWritten, picFailed := beam.ParDo2(ws, &writePictureFn{Output: cfg.Output},
		beam.GroupByKey(ws, beam.ParDo(ws, keyRGBA, rgba)))
	statsWritten, statsFailed := beam.ParDo2(ws, &writeStatsFn{Output: cfg.Output},
		beam.GroupByKey(ws, beam.ParDo(ws, keyStats, stats)))

	failed := beam.Flatten(s, readFailed, toaFailed, compFailed, asmFailed,
		planeFailed, picFailed, statsFailed)
	written := beam.Flatten(s, planeWritten, picWritten, statsWritten)

	osc := s.Scope("outcome")
	outcomes = beam.ParDo(osc, &outcomeFn{Expected: len(sceneOutputs)},
		beam.CoGroupByKey(osc, written, beam.ParDo(osc, keyFailure, failed)))
	beam.ParDo0(osc, &writeFailuresFn{Output: cfg.Output, ScenesIn: len(cfg.Scenes)},
		beam.GroupByKey(osc, beam.AddFixedKey(osc, outcomes)))
	return outcomes
}

func init() {
	register.Function1x2(keyRGBA)
	register.Function1x2(keyStats)
	register.Function1x2(keyFailure)
}

func keyRGBA(t raster.RGBATile) (string, raster.RGBATile) { return t.Scene, t }

func keyStats(st raster.PlaneStats) (string, raster.PlaneStats) { return st.Scene, st }

func keyFailure(f step.Failure) (string, step.Failure) { return f.Key, f }

// Outcome is what became of one scene.
type Outcome struct {
	Scene    string
	Done     bool
	Written  []string
	Failures []step.Failure
}

// discoverScenes returns the scene directories of input: input itself if it
// holds a *_MTL.txt, else each of its subdirectories (a subdirectory that is
// not a scene fails in the read step and is reported, not skipped).
// Inputs with a scheme (gs://...) are listed through Beam's filesystems,
// except in a plan (--plan_out), which lists nothing remote so that it needs
// no credentials: it takes --input as one scene.
func discoverScenes(input string) ([]string, error) {
	if strings.Contains(input, "://") {
		if launchFlags.PlanOut != "" {
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
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, filepath.Join(input, e.Name()))
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
