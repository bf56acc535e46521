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
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rasterbeam"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
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
