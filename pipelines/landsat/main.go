// Command landsat computes reflectance, NDVI and true colour of Landsat 8 scenes.
//
// It is Google's Landsat GPU example for Dataflow, in Go, on beamgpu steps:
// top-of-atmosphere reflectance, NDVI and a true-colour picture.
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
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	_ "github.com/beamgpu/beamgpu/stubs/raster"
	"github.com/beamgpu/beamgpu/transforms/raster"
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

	// flags are package job's: backend selection, the launcher's, --progress.
	flags job.Flags
)

func init() { flags.Register(flag.CommandLine) }

func main() { job.Main(pipeline(configFromFlags, new(summary))) }

// run runs the pipeline of the (parsed) flags, prints its summary to out
// and returns the exit status.
func run(ctx context.Context, out io.Writer) (int, error) {
	return job.RunMain(ctx, pipeline(configFromFlags, new(summary)), out)
}

// execute builds the pipeline of cfg with sel, prints the explain report,
// runs it, prints the summary to out and checks that the counts reconcile.
func execute(ctx context.Context, cfg Config, sel *backend.Selector, out io.Writer) (summary, error) {
	var sum summary
	_, err := job.Execute(ctx, pipeline(func(*job.Run) (Config, error) { return cfg, nil }, &sum), sel, out)
	return sum, err
}

// pipeline is the Landsat pipeline of the configuration configure returns
// once the steps' implementations are chosen; a run's summary goes to sum.
func pipeline(configure func(*job.Run) (Config, error), sum *summary) job.Pipeline {
	var cfg Config
	return job.Pipeline{
		Name:     "landsat",
		Usage:    usage,
		OwnFlags: []string{"input", "output", "tile_size", "stretch_low", "stretch_high", "gamma", "strict"},
		Flags:    &flags,
		Steps:    job.Steps(pipelineSteps...),
		WorkerPaths: func() []job.Path {
			return []job.Path{{Flag: "input", Path: *input}, {Flag: "output", Path: *output}}
		},
		Build: func(_ context.Context, s beam.Scope, r *job.Run) error {
			c, err := configure(r)
			if err != nil {
				return err
			}
			if c.RunID == "" {
				c.RunID = newRunID()
			}
			c.Steps = append(c.Steps, r.Options()...)
			c.Stub = r.StubSteps()
			cfg = c
			Build(s, cfg)
			return nil
		},
		Report: func(ctx context.Context, w io.Writer, res *job.Result) error {
			var err error
			*sum, err = report(ctx, w, res, cfg)
			return err
		},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `landsat: TOA reflectance, NDVI and true colour of Landsat 8 scenes, on Apache Beam.

Usage: landsat [--input=DIR] [--output=DIR] [--backend=auto|cpu|gpu|stub] [Beam flags]

With no --input it runs on the embedded scene %s.
It runs on Beam's local runner (prism) unless --runner says otherwise.
Its steps (for --backend_override=STEP=KIND): %s.
`, raster.SampleSceneID, stepList())
}

func stepList() string {
	var names []string
	for _, st := range pipelineSteps {
		names = append(names, st.Name())
	}
	return strings.Join(names, ", ")
}

// report prints the summary of a run of cfg, checks that the counts
// reconcile, and under --strict fails a run with a failed scene.
func report(ctx context.Context, w io.Writer, res *job.Result, cfg Config) (summary, error) {
	sum := summary{Metrics: res.Metrics, In: len(cfg.Scenes), Elapsed: res.Elapsed, Output: cfg.Output}
	// The counts are those of summary.json, which the pipeline writes from
	// every scene's outcome; Beam's counters should say the same.
	var rs runSummary
	if err := jobfiles.ReadJSON(ctx, join(cfg.Output, summaryFile), &rs); err != nil {
		return sum, fmt.Errorf("reading the run's summary: %w", err)
	}
	sum.Done, sum.Failed = len(rs.Done), len(rs.Failed)
	if len(res.Metrics.Devices) > 0 {
		// The GPU devices' counts are known only now, from the run's metrics.
		rs.Devices = res.Metrics.Devices
		if err := jobfiles.WriteJSON(ctx, cfg.RunID, join(cfg.Output, summaryFile), rs); err != nil {
			return sum, fmt.Errorf("adding the GPU devices to the run's summary: %w", err)
		}
	}
	sum.Print(w)
	if d, f := int(res.Counters["scenes_done"]), int(res.Counters["scenes_failed"]); d != sum.Done || f != sum.Failed {
		fmt.Fprintf(w, "note: Beam's counters say %d done and %d failed; %s, from the scenes' outcomes, says %d and %d\n",
			d, f, summaryFile, sum.Done, sum.Failed)
	}
	if err := sum.Reconcile(); err != nil {
		return sum, err
	}
	if *strict && sum.Failed > 0 {
		return sum, fmt.Errorf("--strict: %d of %d scenes failed; see %s", sum.Failed, sum.In, join(cfg.Output, failedFile))
	}
	return sum, nil
}

// stubOutput is where a run with stand-ins writes when --output is not given,
// so that its zeros never overwrite real results.
const stubOutput = "out/stub/landsat"

// outputDir is --output, or stubOutput for a run with stand-ins (stub) when
// --output was not given.
func outputDir(stub, given bool) string {
	if !given && *output == defaultOutput && stub {
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

// claimOutput makes the output directory this run's (jobfiles.Output.Claim):
// it refuses an output directory that is the filesystem root, the input
// or a directory in it (the next run would read it as a scene), or that of
// a live run; it locks the run ID there (a local output), removes the
// temporary files of earlier runs that were killed (kill -9, power loss:
// their lock is gone) and the previous run's summary.json and failed.jsonl,
// so that a run that fails leaves no report of another; its cleanup, when
// the run is over or interrupted, stops the run's writes, removes its
// temporaries and says what was finished.
func claimOutput(r *job.Run, cfg Config, input string) error {
	o := jobfiles.Output{Program: "landsat", Dir: cfg.Output, Run: cfg.RunID, Files: reservedNames,
		Finished: func() string {
			done := published(cfg.RunID)
			return fmt.Sprintf("%d of %d scenes were finished and published (%s)", len(done), len(cfg.Scenes), strings.Join(done, ", "))
		}}
	if input != "" {
		// The scenes are input's directories (or input is one): an output
		// in input, or input itself, would be read as a scene next time.
		o.Inputs = append(o.Inputs, jobfiles.Input{Flag: "input", Path: jobfiles.Join(input, "*"), Glob: true})
	}
	return o.Claim(context.Background(), r)
}

// configFromFlags resolves the input scenes (extracting the embedded one if
// --input is empty, removed when the run is over) and checks that the
// output directory is writable.
func configFromFlags(r *job.Run) (Config, error) {
	cfg := Config{Output: outputDir(len(r.StubSteps()) > 0, flagGiven("output")), TileSize: *tileSize,
		Composite: raster.CompositeParams{Low: *low, High: *high, Gamma: *gamma}}
	if cfg.TileSize <= 0 {
		return cfg, fmt.Errorf("--tile_size %d: want a positive number of pixels", cfg.TileSize)
	}
	if err := cfg.Composite.Validate(); err != nil {
		return cfg, err
	}
	cfg.RunID, cfg.Started, cfg.Args = newRunID(), time.Now(), os.Args[1:]
	dir := *input
	if dir == "" {
		tmp, err := jobfiles.Extract(embedded, "testdata")
		if err != nil {
			return cfg, err
		}
		r.Cleanup(func() { os.RemoveAll(tmp) })
		dir = filepath.Join(tmp, raster.SampleSceneID)
		slog.Info("landsat: no --input: using the embedded scene " + raster.SampleSceneID)
	}
	scenes, err := discoverScenes(dir)
	if err != nil {
		return cfg, err
	}
	cfg.Scenes = scenes
	return cfg, claimOutput(r, cfg, *input)
}
