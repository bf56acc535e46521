package rasterbeam_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	_ "github.com/beamgpu/beamgpu/stubs/raster" // the stub case
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rasterbeam"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { ptest.Main(m) }

func init() {
	register.Function1x1(fingerprint)
	register.Function1x1(failureStep)
}

// fingerprint summarises a whole-scene plane: its name, size and the sum of
// its valid pixels (to 1e-6), so passert can compare planes.
func fingerprint(t raster.Tile) string {
	sum, nan := 0.0, 0
	for _, v := range t.Data[0] {
		if v != v {
			nan++
			continue
		}
		sum += float64(v)
	}
	return fmt.Sprintf("%s %dx%d sum=%.6f nan=%d", t.Names[0], t.W, t.H, sum, nan)
}

func failureStep(f step.Failure) string { return f.Step + ": " + f.Key }

// The raster steps on prism, tiled 16x16, give the planes that the CPU
// functions give on the whole scene in one piece.
func TestStepsOnPrismMatchWholeSceneComputation(t *testing.T) {
	whole, err := raster.ReadScene(raster.SceneRef{Dir: raster.SampleSceneDir(), TileSize: 64, Bands: raster.DefaultBands})
	require.NoError(t, err)
	require.Len(t, whole, 1)
	refl, err := raster.TOA(whole[0])
	require.NoError(t, err)
	ndvi, err := raster.NDVITile(refl)
	require.NoError(t, err)
	var want []any
	for _, name := range []string{"B2", "B3", "B4", "B5"} {
		p, err := refl.Select(name)
		require.NoError(t, err)
		want = append(want, fingerprint(p))
	}
	want = append(want, fingerprint(ndvi))

	sel := backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(rasterbeam.Steps...)})
	opt := step.Using(sel)
	bad := t.TempDir() // not a scene: fails in the read step
	p, s := beam.NewPipelineWithRoot()
	refs := beam.Create(s, raster.SceneRef{Dir: raster.SampleSceneDir(), TileSize: 16, Bands: raster.DefaultBands},
		raster.SceneRef{Dir: bad, TileSize: 16, Bands: raster.DefaultBands})
	dn, readFailed := rasterbeam.Read(s, refs, opt)
	passert.Count(s, dn, "tiles", 9)
	reflTiles, toaFailed := rasterbeam.ReflectanceTOA(s, dn, opt)
	ndviTiles, ndviFailed := rasterbeam.NDVI(s, reflTiles, opt)
	rgba, compFailed := rasterbeam.Composite(s, reflTiles, raster.CompositeParams{}, opt)
	passert.Count(s, rgba, "picture tiles", 9)
	planes, asmFailed := rasterbeam.AssemblePlanes(s, beam.Flatten(s, reflTiles, ndviTiles), opt)
	passert.Equals(s, beam.ParDo(s, fingerprint, planes), want...)
	passert.Equals(s, beam.ParDo(s, failureStep, readFailed), "scan: "+bad)
	for _, f := range []beam.PCollection{toaFailed, ndviFailed, compFailed, asmFailed} {
		passert.Empty(s, f)
	}
	ptest.RunAndValidate(t, p)

	r := sel.Report()
	for _, name := range []string{"scan", "read", "toa", "ndvi", "composite", "assemble"} {
		assert.Equal(t, backend.CPU, r.Impl(name), name)
	}
}

func TestNaNSafeFingerprint(t *testing.T) {
	nan := float32(math.NaN())
	assert.Equal(t, "B4 2x1 sum=1.000000 nan=1", fingerprint(raster.Tile{Rect: raster.Rect{W: 2, H: 1}, Names: []string{"B4"}, Data: [][]float32{{1, nan}}}))
}

// In a Beam binary, a local band file is read at offsets directly (the
// file itself, not Beam's stream reopened and skipped up to each window's
// offset): a window deep in a file reads only its own bytes.
func TestLocalFilesAreReadAtOffsets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "band.TIF")
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 31)
	}
	require.NoError(t, os.WriteFile(path, data, 0o644))
	f, err := files.OpenAt(context.Background(), path)
	require.NoError(t, err)
	defer f.Close()
	_, direct := f.(interface{ Fd() uintptr })
	assert.True(t, direct, "a local path opens as a file (%T)", f)
	assert.Equal(t, int64(len(data)), f.Size())
	got := make([]byte, 4096)
	for _, off := range []int64{7 << 20, 0, 5<<20 + 123} {
		_, err := f.ReadAt(got, off)
		require.NoError(t, err)
		assert.Equal(t, data[off:off+4096], got, "at %d", off)
	}
}

// tileSums summarises every plane of a tile, as fingerprint does one.
func tileSums(t raster.Tile) string {
	s := t.ID()
	for i, name := range t.Names {
		s += " " + fingerprint(raster.Tile{Rect: t.Rect, Names: []string{name}, Data: [][]float32{t.Data[i]}})
	}
	return s
}

func init() { register.Function1x1(tileSums) }

// With step.RecycleOutputs, the toa_ndvi step writes each tile into the
// planes of the tiles it emitted before: consumers that are done with a tile
// when they return (tileSums) see the pixels the CPU function gives, and
// the step counts every tile it handed back. Without the option, or with
// the stub (whose outputs are not the CPU's), it hands back none.
func TestRecycledTilesKeepTheirPixels(t *testing.T) {
	ref := raster.SceneRef{Dir: raster.SampleSceneDir(), TileSize: 16, Bands: raster.DefaultBands}
	dnTiles, err := raster.ReadScene(ref)
	require.NoError(t, err)
	require.Len(t, dnTiles, 9) // 41x41: four sizes of tile
	var want []any
	for _, d := range dnTiles {
		out, err := raster.TOANDVI(d)
		require.NoError(t, err)
		want = append(want, tileSums(out))
	}
	for _, tc := range []struct {
		name     string
		impl     backend.Kind
		recycle  bool
		recycled int64
	}{
		{"cpu, recycled", backend.CPU, true, 9},
		{"cpu", backend.CPU, false, 0},
		{"stub, recycled", backend.Stub, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := backend.MustNew(backend.Config{Default: tc.impl, Steps: step.Backends(rasterbeam.Steps...)})
			opts := []step.Option{step.Using(sel)}
			if tc.recycle {
				opts = append(opts, step.RecycleOutputs())
			}
			p, s := beam.NewPipelineWithRoot()
			cpu := backend.MustNew(backend.Config{Default: backend.CPU, Steps: step.Backends(rasterbeam.Steps...)})
			dn, readFailed := rasterbeam.Read(s, beam.Create(s, ref), step.Using(cpu))
			out, failed := rasterbeam.ReflectanceAndNDVI(s, dn, opts...)
			passert.Empty(s, readFailed)
			passert.Empty(s, failed)
			if tc.impl == backend.CPU {
				passert.Equals(s, beam.ParDo(s, tileSums, out), want...)
			} else {
				passert.Count(s, out, "tiles", 9)
			}
			res, err := ptest.RunWithMetrics(p)
			require.NoError(t, err)
			var recycled int64
			for _, c := range res.Metrics().AllMetrics().Counters() {
				if c.Namespace() == stepbeam.Namespace && c.Name() == raster.StepTOANDVI.Name()+"."+stepbeam.MetricRecycled {
					recycled += c.Result()
				}
			}
			assert.Equal(t, tc.recycled, recycled)
		})
	}
}
