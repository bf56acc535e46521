// Command clippipe is a small pipeline of this module: it clips tiles with
// the clip step on prism and writes each output tile's planes as JSON lines.
//
//	clippipe --output=FILE [--backend=cpu|gpu|stub|auto] [--gpu_executor=PATH]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"

	"example.com/clipstep/clip"
	"example.com/clipstep/clipbeam"
	_ "example.com/clipstep/clipstub"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
)

var output = flag.String("output", "", "file of JSON lines, one per output tile")

var backendFlags backend.Flags

func init() {
	backendFlags.Register(flag.CommandLine)
	register.Function2x0(format)
	register.DoFn2x1[int, func(*string) bool, error](&writeFn{})
}

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

type writeFn struct{ Path string }

func (f *writeFn) ProcessElement(_ int, lines func(*string) bool) error {
	var all []string
	var l string
	for lines(&l) {
		all = append(all, l)
	}
	sort.Strings(all)
	out, err := os.Create(f.Path)
	if err != nil {
		return err
	}
	for _, l := range all {
		fmt.Fprintln(out, l)
	}
	return out.Close()
}

func main() {
	flag.Parse()
	beam.Init()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clippipe:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := backendFlags.Config(step.Backends(clip.Step), step.UseExecutor(backendFlags.Executor))
	if err != nil {
		return err
	}
	sel, err := backend.New(cfg)
	if err != nil {
		return err
	}
	p, s := beam.NewPipelineWithRoot()
	var tiles []raster.Tile
	for i := range 5 {
		t := clip.Sample(3+i, 2+i).Tile
		t.Rect.X = 100 * i
		tiles = append(tiles, t)
	}
	out, failed := clipbeam.Clip(s, beam.CreateList(s, tiles), -0.5, 1, step.Using(sel))
	beam.ParDo0(s, &writeFn{Path: *output}, beam.GroupByKey(s, beam.AddFixedKey(s, beam.ParDo(s, format, out))))
	beam.ParDo0(s, func(f step.Failure) error { return f }, failed)
	if err := backendFlags.Explain(sel); err != nil {
		return err
	}
	_, err = beamx.RunWithMetrics(context.Background(), p)
	return err
}
