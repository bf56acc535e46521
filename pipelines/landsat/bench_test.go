package main

import (
	"context"
	"log/slog"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rasterbeam"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// benchScene is the committed crop repeated to benchSize x benchSize pixels
// (bands 2-5), built once per process; loopback workers share it.
var benchScene raster.DNTile

const (
	benchSize = 4096
	benchTile = 512 // 1 MiB per float32 plane
)

func buildBenchScene(b *testing.B) {
	if benchScene.DN != nil {
		return
	}
	tiles, err := raster.ReadScene(raster.SceneRef{Dir: sceneDir(), TileSize: 64, Bands: raster.DefaultBands})
	if err != nil {
		b.Fatal(err)
	}
	src := tiles[0]
	s := src
	s.SceneW, s.SceneH, s.Rect = benchSize, benchSize, raster.Rect{W: benchSize, H: benchSize}
	s.DN = make([][]uint16, len(src.DN))
	for i := range s.DN {
		s.DN[i] = make([]uint16, benchSize*benchSize)
		for y := 0; y < benchSize; y++ {
			for x := 0; x < benchSize; x++ {
				s.DN[i][y*benchSize+x] = src.DN[i][(y%src.H)*src.W+x%src.W]
			}
		}
	}
	benchScene = s
}

// cutTile cuts window r out of benchScene.
func cutTile(r raster.Rect) raster.DNTile {
	t := benchScene
	t.Rect = r
	t.DN = make([][]uint16, len(benchScene.DN))
	for i, p := range benchScene.DN {
		t.DN[i] = make([]uint16, 0, r.Area())
		for y := r.Y; y < r.Y+r.H; y++ {
			t.DN[i] = append(t.DN[i], p[y*benchSize+r.X:y*benchSize+r.X+r.W]...)
		}
	}
	return t
}

func cutTileFn(r raster.Rect, emit func(raster.DNTile)) { emit(cutTile(r)) }

type countFn struct{ n beam.Counter }

func (f *countFn) Setup() { f.n = beam.NewCounter("bench", "tiles") }
func (f *countFn) ProcessElement(ctx context.Context, t raster.Tile) {
	f.n.Inc(ctx, 1)
}

func init() {
	register.Function2x0(cutTileFn)
	register.DoFn2x0[context.Context, raster.Tile](&countFn{})
	beam.RegisterType(reflectTypeOfRect)
}

// BenchmarkPipelineVsRawLoop runs TOA -> NDVI (the toa_ndvi step) over a
// 4096x4096 scene in 512x512 tiles twice in each iteration: as a pipeline on
// prism (tiles cut by a DoFn, the step's DoFn, a counting sink) and as a
// plain loop calling the same CPU function. ratio_raw_to_pipeline = loop time / pipeline time: 1
// means Beam costs nothing.
func BenchmarkPipelineVsRawLoop(b *testing.B) {
	// The runner's informational lines would land in the middle of the
	// result's line (go test prints the binary's stderr with its stdout),
	// where make bench's filter loses the result.
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	buildBenchScene(b)
	rects, _ := raster.Split(benchSize, benchSize, benchTile)
	var raw, pipe time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for _, r := range rects {
			if _, err := raster.TOANDVI(cutTile(r)); err != nil {
				b.Fatal(err)
			}
		}
		raw += time.Since(start)

		sel := backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(pipelineSteps...)})
		p, s := beam.NewPipelineWithRoot()
		tiles := beam.ParDo(s, cutTileFn, beam.CreateList(s, rects))
		out, _ := rasterbeam.ReflectanceAndNDVI(s, tiles, step.Using(sel))
		beam.ParDo0(s, &countFn{}, out)
		start = time.Now()
		res, err := beamx.RunWithMetrics(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		pipe += time.Since(start)
		if n := res.Metrics().AllMetrics().Counters(); len(n) == 0 {
			b.Fatal("no metrics")
		}
	}
	px := float64(benchSize * benchSize * b.N)
	b.ReportMetric(float64(raw.Nanoseconds())/px, "raw-ns/pixel")
	b.ReportMetric(float64(pipe.Nanoseconds())/px, "pipeline-ns/pixel")
	b.ReportMetric(float64(raw)/float64(pipe), "ratio_raw_to_pipeline")
}

var reflectTypeOfRect = reflect.TypeOf(raster.Rect{})
