// Command clippipe is this module's pipeline, on job.Main.
//
// It clips sample tiles with the clip step and writes each output tile as a
// JSON line, sorted.
//
//	clippipe [--output=FILE] [--tiles=N] [--backend=auto|cpu|gpu|stub] [--gpu_executor=PATH] [Beam flags]
//
// Its main is job.Main: the backend, launch and explain flags, the explain
// report, the run on the runner --runner names (prism by default, Dataflow),
// the step's counts, STUB RUN for a run with the stand-in, the exit status.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"sort"

	"example.com/clipstep/clip"
	"example.com/clipstep/clipbeam"
	_ "example.com/clipstep/clipstub" // the stand-in, for --backend=stub
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"   // gs:// outputs (Dataflow)
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // local outputs
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
)

var (
	output = flag.String("output", "out/clip.jsonl", "file of JSON lines, one per output tile (a gs:// path on Dataflow)")
	tiles  = flag.Int("tiles", 5, "how many sample tiles to clip")
)

func init() {
	register.Function2x0(format)
	register.Function1x1(failRun)
	register.DoFn3x1[context.Context, int, func(*string) bool, error](&writeFn{})
}

func main() {
	job.Main(job.Pipeline{
		Name:        "clippipe",
		OwnFlags:    []string{"output", "tiles"},
		Steps:       job.Steps(clip.Step),
		WorkerPaths: func() []job.Path { return []job.Path{{Flag: "output", Path: *output}} },
		Build:       build,
	})
}

// build clips --tiles sample tiles to [-0.5, 1] and writes them to --output.
func build(_ context.Context, s beam.Scope, r *job.Run) error {
	if *tiles <= 0 {
		return fmt.Errorf("--tiles=%d: want a positive number", *tiles)
	}
	var in []raster.Tile
	for i := range *tiles {
		t := clip.Sample(3+i, 2+i).Tile
		t.Rect.X = 100 * i
		in = append(in, t)
	}
	out, failed := clipbeam.Clip(s, beam.CreateList(s, in), -0.5, 1, r.Options()...)
	lines := beam.ParDo(s, format, out)
	beam.ParDo0(s, &writeFn{Path: *output}, beam.GroupByKey(s, beam.AddFixedKey(s, lines)))
	beam.ParDo0(s, failRun, failed)
	return nil
}

// failRun fails the run on a failed tile: this example has no dead-letter
// file (the project's pipelines write them to failed.jsonl).
func failRun(f step.Failure) error { return f }

// format writes a tile as a JSON line, NaN as null.
func format(t raster.Tile, emit func(string)) {
	planes := make([][]*float32, len(t.Data))
	for i, p := range t.Data {
		for _, v := range p {
			var x *float32
			if !math.IsNaN(float64(v)) {
				x = &v
			}
			planes[i] = append(planes[i], x)
		}
	}
	b, _ := json.Marshal(map[string]any{"tile": t.ID(), "names": t.Names, "planes": planes})
	emit(string(b))
}

// writeFn writes every line, sorted, to Path through Beam's filesystems.
type writeFn struct{ Path string }

func (f *writeFn) ProcessElement(ctx context.Context, _ int, lines func(*string) bool) error {
	var all []string
	var l string
	for lines(&l) {
		all = append(all, l)
	}
	sort.Strings(all)
	fsys, err := filesystem.New(ctx, f.Path)
	if err != nil {
		return err
	}
	defer fsys.Close()
	w, err := fsys.OpenWrite(ctx, f.Path)
	if err != nil {
		return err
	}
	for _, l := range all {
		fmt.Fprintln(w, l)
	}
	return w.Close()
}
