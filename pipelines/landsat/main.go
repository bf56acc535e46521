// Command landsat computes top-of-atmosphere reflectance, NDVI and a
// true-colour picture of Landsat 8 scenes: Google's Landsat GPU example for
// Dataflow, in Go, on beamgpu steps.
//
// With no flags it processes the embedded 41x41 crop of scene
// LC08_L1TP_195025_20130707_20170503_01_T1 on Beam's local runner (prism) and
// writes to out/landsat. See --help.
//
// For each scene, under --output/<product ID>/:
//
//	reflectance_B2.npy .. reflectance_B5.npy  float32 TOA reflectance, (rows, cols), NaN = no-data
//	ndvi.npy                                  float32 NDVI, NaN = no-data
//	ndvi.png                                  NDVI colour map, no-data transparent
//	ndvi_legend.png                           the colour map's legend: colour bar with values
//	truecolor.png                             B4/B3/B2 with a percentile stretch and gamma
//	truecolor_preview.png                     truecolor.png reduced to at most 2048 pixels a side
//	stats.json                                per band and NDVI: pixels, valid, nodata, mean, min, max
//
// and at --output's root failed.jsonl (one failure per line: input, step,
// reason) and summary.json (scenes done and failed).
//
// Scenes stream through in bounded memory: bands are decoded a window at a
// time, tiles are written into the arrays as they arrive, statistics and
// the contrast stretch are combined from the tiles, and the pictures are
// built from the written arrays. A scene's files are written under
// temporary names and renamed once all are whole; a scene that fails leaves
// none.
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/launch"
	_ "github.com/beamgpu/beamgpu/stubs/raster"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
)

//go:embed testdata/LC08_L1TP_195025_20130707_20170503_01_T1
var embedded embed.FS

const defaultOutput = "out/landsat"

var (
	input    = flag.String("input", "", "a scene directory (holding *_MTL.txt and the band GeoTIFFs) or a directory of scene directories; empty: the embedded Landsat 8 crop")
	output   = flag.String("output", defaultOutput, "output directory: one subdirectory per scene, plus failed.jsonl and summary.json (a run with stub steps: "+stubOutput+")")
	tileSize = flag.Int("tile_size", 512, "side of the square tiles scenes are split into, in pixels (on object-store outputs, gs://..., the height of full-width row strips)")
	low      = flag.Float64("stretch_low", raster.DefaultCompositeParams.Low, "percentile of each channel mapped to black in truecolor.png")
	high     = flag.Float64("stretch_high", raster.DefaultCompositeParams.High, "percentile of each channel mapped to white in truecolor.png")
	gamma    = flag.Float64("gamma", raster.DefaultCompositeParams.Gamma, "gamma of truecolor.png: the stretched value v becomes v^(1/gamma)")
	strict   = flag.Bool("strict", false, "exit with status 1 if any scene failed (failures are always listed in failed.jsonl)")
	progress = flag.Duration("progress", 10*time.Second, "interval of progress lines while the pipeline runs (0: none)")

	backendFlags backend.Flags
	launchFlags  launch.Flags
)

func init() {
	backendFlags.Register(flag.CommandLine)
	launchFlags.Register(flag.CommandLine)
	flag.Usage = usage
}

func usage() {
	fmt.Fprintf(flag.CommandLine.Output(), `landsat: TOA reflectance, NDVI and true colour of Landsat 8 scenes, on Apache Beam.

Usage: landsat [--input=DIR] [--output=DIR] [--backend=auto|cpu|gpu|stub] [Beam flags]

With no --input it runs on the embedded scene %s.
It runs on Beam's local runner (prism) unless --runner says otherwise.
Its steps (for --backend_override=STEP=KIND): %s.

Flags of this pipeline:
`, raster.SampleSceneID, stepList())
	own := map[string]bool{}
	for _, n := range []string{"input", "output", "tile_size", "stretch_low", "stretch_high", "gamma", "strict", "progress", "backend", "backend_override", "explain_json", "gpu_executor",
		"plan_out", "right_fitting", "worker_accelerator", "gpu_accelerator", "gpu_processes", "skip_gpu_rules", "cpuprofile"} {
		own[n] = true
	}
	flag.VisitAll(func(f *flag.Flag) {
		if own[f.Name] {
			fmt.Fprintf(flag.CommandLine.Output(), "  --%s (default %q)\n      %s\n", f.Name, f.DefValue, f.Usage)
		}
	})
	fmt.Fprintf(flag.CommandLine.Output(), "\nBeam's own flags (--runner, --endpoint, --job_name, ...) are accepted too; 'landsat --help_beam' lists them.\n")
}

func stepList() string {
	var names []string
	for _, st := range pipelineSteps {
		names = append(names, st.Name())
	}
	return strings.Join(names, ", ")
}

func main() {
	for _, a := range os.Args[1:] {
		if a == "--help_beam" || a == "-help_beam" {
			flag.CommandLine.SetOutput(os.Stdout)
			flag.PrintDefaults()
			return
		}
	}
	flag.Parse()
	beam.Init()
	code, err := run(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "landsat:", err)
	}
	os.Exit(code)
}

// run builds and runs the pipeline from the flags, prints the summary to
// out and returns the exit status.
func run(ctx context.Context, out io.Writer) (int, error) {
	// The launch configuration (runner, Dataflow GPU rules) is checked
	// before anything is read or built.
	if err := launchFlags.Validate(); err != nil {
		return 2, err
	}
	for _, f := range []struct{ name, path string }{{"input", *input}, {"output", *output}} {
		if err := launchFlags.WorkerPath(f.name, f.path); err != nil {
			return 2, err
		}
	}
	sel, err := job.Selector(&backendFlags, &launchFlags, pipelineSteps...)
	if err != nil {
		return 2, err
	}
	cfg, cleanup, err := configFromFlags(sel)
	if err != nil {
		return 2, err
	}
	defer cleanup()

	sum, err := execute(ctx, cfg, sel, out)
	if err != nil {
		return 1, err
	}
	if *strict && sum.Failed > 0 {
		return 1, fmt.Errorf("--strict: %d of %d scenes failed; see %s", sum.Failed, sum.In, join(cfg.Output, failedFile))
	}
	return 0, nil
}

// execute builds the pipeline of cfg, prints the explain report, runs it,
// prints the summary to out and checks that the counts reconcile.
func execute(ctx context.Context, cfg Config, sel *backend.Selector, out io.Writer) (summary, error) {
	cfg.Steps = append(cfg.Steps, step.Using(sel))
	cfg.Stub = stubSteps(sel)
	m, took, launched, err := job.Run(ctx, "landsat", sel, backendFlags.Explain, *progress, launchFlags, func(s beam.Scope) { Build(s, cfg) })
	if err != nil {
		return summary{}, err
	}
	if launched.Result == nil {
		return summary{}, job.Launched(out, launched)
	}
	sum := summary{Metrics: m, In: len(cfg.Scenes), Elapsed: took, Output: cfg.Output, Stub: cfg.Stub}
	// The counts are those of summary.json, which the pipeline writes from
	// every scene's outcome; Beam's counters should say the same.
	var rs runSummary
	if err := job.ReadJSON(ctx, join(cfg.Output, summaryFile), &rs); err != nil {
		return sum, fmt.Errorf("reading the run's summary: %w", err)
	}
	sum.Done, sum.Failed = len(rs.Done), len(rs.Failed)
	sum.Print(out)
	if d, f := int(m.Counters["scenes_done"]), int(m.Counters["scenes_failed"]); d != sum.Done || f != sum.Failed {
		fmt.Fprintf(out, "note: Beam's counters say %d done and %d failed; %s, from the scenes' outcomes, says %d and %d\n",
			d, f, summaryFile, sum.Done, sum.Failed)
	}
	return sum, sum.Reconcile()
}

// stubSteps returns the steps of the pipeline that sel runs as stand-ins.
func stubSteps(sel *backend.Selector) []string {
	var out []string
	for _, s := range pipelineSteps {
		if d, err := sel.Resolve(s.Backend()); err == nil && d.Impl == backend.Stub {
			out = append(out, s.Name())
		}
	}
	return out
}

// stubOutput is where a run with stand-ins writes when --output is not given,
// so that its zeros never overwrite real results.
const stubOutput = "out/stub/landsat"

// outputDir is --output, or stubOutput for a run with stand-ins when
// --output was not given.
func outputDir(sel *backend.Selector, given bool) string {
	if !given && *output == defaultOutput && len(stubSteps(sel)) > 0 {
		slog.Info("landsat: stub run (stand-ins, no results): writing to " + stubOutput + " (--output to choose)")
		return stubOutput
	}
	return *output
}

// flagGiven reports whether a flag was set on the command line.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// configFromFlags resolves the input scenes (extracting the embedded one if
// --input is empty) and checks that the output directory is writable.
func configFromFlags(sel *backend.Selector) (Config, func(), error) {
	cfg := Config{Output: outputDir(sel, flagGiven("output")), TileSize: *tileSize,
		Composite: raster.CompositeParams{Low: *low, High: *high, Gamma: *gamma}}
	cleanup := func() {}
	if cfg.TileSize <= 0 {
		return cfg, cleanup, fmt.Errorf("--tile_size %d: want a positive number of pixels", cfg.TileSize)
	}
	if err := cfg.Composite.Validate(); err != nil {
		return cfg, cleanup, err
	}
	if err := job.CheckWritable("output", cfg.Output); err != nil {
		return cfg, cleanup, err
	}
	dir := *input
	if dir == "" {
		tmp, err := job.Extract(embedded, "testdata")
		if err != nil {
			return cfg, cleanup, err
		}
		cleanup = func() { os.RemoveAll(tmp) }
		dir = filepath.Join(tmp, raster.SampleSceneID)
		slog.Info("landsat: no --input: using the embedded scene " + raster.SampleSceneID)
	}
	scenes, err := discoverScenes(dir)
	if err != nil {
		cleanup()
		return cfg, func() {}, err
	}
	cfg.Scenes = scenes
	return cfg, cleanup, nil
}
