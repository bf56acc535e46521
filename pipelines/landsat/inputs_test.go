package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rastertest"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The embedded crop's outputs are byte for byte those of the pipeline
// before it read windows and wrote tiles as they arrive (SHA-256 of the
// files it wrote then).
func TestEmbeddedSceneOutputsUnchanged(t *testing.T) {
	_, out := runScenes(t, []string{sceneDir()}, backend.CPU, 16)
	want := map[string]string{
		"ndvi.npy":           "eca9bdd5166828b89026627c1686e3bc6bb43bebbb4aa271c8ce9209204817a6",
		"ndvi.png":           "ada13dcf52ef1f05b0785d92c36b1e6da8dd34eee67220c0dc65ded38a6cb42b",
		"reflectance_B2.npy": "dd852a3f89c36eb032e1af88049dbdfd23c04703704adc8d4e37e2e9d67edaa9",
		"reflectance_B3.npy": "3890100c7e865fb192204e993af53e9f24a447e6ee87fc0306f7dd807af7d407",
		"reflectance_B4.npy": "91f70ccb12cb76dba88f66a8b67318de516b4312443be00c44c12fc7f08482ce",
		"reflectance_B5.npy": "d408a59ce58ca77cc061a2d5ab44430626085f65bece79221147d6375665b4d4",
		"stats.json":         "b72ed58509a4dc4beaeffe1361dbced7d3b6f80f289d92cd0e15d320b27b4f5a",
		"truecolor.png":      "1582101c763f7461063f9075921c67620863c45bdd2628679a3ab6db2e3d317b",
		// The preview of a picture smaller than 2048 pixels is the picture.
		"truecolor_preview.png": "1582101c763f7461063f9075921c67620863c45bdd2628679a3ab6db2e3d317b",
	}
	for name, sum := range want {
		data, err := os.ReadFile(filepath.Join(out, scene, name))
		require.NoError(t, err)
		got := sha256.Sum256(data)
		assert.Equal(t, sum, hex.EncodeToString(got[:]), name)
	}
}

// files lists every file under root, relative to it.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			out = append(out, rel)
		}
		return err
	}))
	sort.Strings(out)
	return out
}

func readFailures(t *testing.T, out string) []step.Failure {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, failedFile))
	require.NoError(t, err)
	var failures []step.Failure
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var fl step.Failure
		require.NoError(t, json.Unmarshal([]byte(line), &fl))
		failures = append(failures, fl)
	}
	return failures
}

func editMTL(t *testing.T, dir string, from, to string) {
	t.Helper()
	p := filepath.Join(dir, scene+"_MTL.txt")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Contains(t, string(data), from)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), from, to, 1)), 0o644))
}

// Metadata that would make the pipeline write or read outside its
// directories, or compute absurd values, fails its scene when it is scanned,
// with the reason; nothing is written outside --output, and nothing of the
// failed scenes inside it.
func TestHostileMetadataIsRefused(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "in")
	cases := map[string][2]string{
		"a_parent_product": {`LANDSAT_PRODUCT_ID = "` + scene + `"`, `LANDSAT_PRODUCT_ID = "../../x"`},
		"b_absolute_band":  {`FILE_NAME_BAND_4 = "` + scene + `_B4.TIF"`, `FILE_NAME_BAND_4 = "/etc/passwd"`},
		"c_parent_band":    {`FILE_NAME_BAND_3 = "` + scene + `_B3.TIF"`, `FILE_NAME_BAND_3 = "../good/` + scene + `_B3.TIF"`},
		"d_huge_coef":      {"REFLECTANCE_MULT_BAND_5 = 2.0000E-05", "REFLECTANCE_MULT_BAND_5 = 1e300"},
		"e_nan_coef":       {"REFLECTANCE_ADD_BAND_2 = -0.100000", "REFLECTANCE_ADD_BAND_2 = NaN"},
		"f_low_sun":        {"SUN_ELEVATION = 58.99675180", "SUN_ELEVATION = 0.00001"},
	}
	for name, edit := range cases {
		copyDir(t, sceneDir(), filepath.Join(in, name))
		editMTL(t, filepath.Join(in, name), edit[0], edit[1])
	}
	scenes, err := discoverScenes(in)
	require.NoError(t, err)
	out := filepath.Join(root, "deep", "er", "out")
	var buf bytes.Buffer
	sum, err := execute(context.Background(), Config{Scenes: scenes, Output: out, TileSize: 16}, selector(t, backend.CPU), &buf)
	require.NoError(t, err, buf.String())
	assert.Equal(t, []int{6, 0, 6}, []int{sum.In, sum.Done, sum.Failed})

	reasons := map[string]string{}
	for _, fl := range readFailures(t, out) {
		assert.Equal(t, raster.StepScan.Name(), fl.Step, "refused before any pixel is decoded: %v", fl)
		reasons[filepath.Base(fl.Input)] = fl.Reason
	}
	assert.Contains(t, reasons["a_parent_product"], `product ID "../../x": not a plain file name`)
	assert.Contains(t, reasons["b_absolute_band"], `FILE_NAME_BAND_4 = "/etc/passwd": not a plain file name`)
	assert.Contains(t, reasons["c_parent_band"], "FILE_NAME_BAND_3")
	assert.Contains(t, reasons["d_huge_coef"], "REFLECTANCE_MULT_BAND_5 = 1e+300: outside [2e-07, 0.002]")
	assert.Contains(t, reasons["e_nan_coef"], `REFLECTANCE_ADD_BAND_2 = "NaN" is not a finite number`)
	assert.Contains(t, reasons["f_low_sun"], "band 2 with SUN_ELEVATION = 1e-05 gives reflectances up to")

	// Only the input and the two run files exist under the test's root.
	var outside []string
	for _, f := range files(t, root) {
		if !strings.HasPrefix(f, "in/") {
			outside = append(outside, f)
		}
	}
	assert.Equal(t, []string{"deep/er/out/failed.jsonl", "deep/er/out/summary.json"}, outside)
}

// The same product in two directories: the first (in sorted order) is
// processed, the second fails naming the product and the first directory,
// and the counts reconcile.
func TestDuplicateProduct(t *testing.T) {
	in := t.TempDir()
	copyDir(t, sceneDir(), filepath.Join(in, "first"))
	copyDir(t, sceneDir(), filepath.Join(in, "second"))
	scenes, err := discoverScenes(in)
	require.NoError(t, err)
	sum, out := runScenes(t, scenes, backend.CPU, 16)
	assert.Equal(t, []int{2, 1, 1}, []int{sum.In, sum.Done, sum.Failed})
	failures := readFailures(t, out)
	require.Len(t, failures, 1)
	assert.Equal(t, filepath.Join(in, "second"), failures[0].Input)
	assert.Contains(t, failures[0].Reason, "product "+scene+" also in "+filepath.Join(in, "first"))

	var rs runSummary
	data, err := os.ReadFile(filepath.Join(out, summaryFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rs))
	assert.Equal(t, []string{scene}, rs.Done)
	assert.Equal(t, []string{filepath.Join(in, "second")}, rs.Failed)
	var want []string
	for _, n := range sceneOutputs {
		want = append(want, filepath.Join(scene, n))
	}
	want = append(want, failedFile, summaryFile)
	sort.Strings(want)
	assert.Equal(t, want, files(t, out))
}

// A scene that fails after some of its tiles were written (a corrupt tile
// of one band) leaves no file behind: not its arrays, not their
// temporaries, not its directory.
func TestFailedSceneLeavesNoFiles(t *testing.T) {
	in := t.TempDir()
	good, bad := "LC08_L1TP_000001_20200101_20200101_01_T1", "LC08_L1TP_000002_20200101_20200101_01_T1"
	lt := rastertest.TIFF{Tiled: true, BlockW: 16, BlockH: 16, Compression: rastertest.Deflate}
	for _, id := range []string{good, bad} {
		require.NoError(t, rastertest.WriteScene(filepath.Join(in, id), rastertest.Scene{ProductID: id, Width: 80, Height: 64, TIFF: lt}))
	}
	// Corrupt the last tile of band 3 of the bad scene.
	b3 := filepath.Join(in, bad, bad+"_B3.TIF")
	data, err := os.ReadFile(b3)
	require.NoError(t, err)
	l, err := raster.ReadLayout(bytes.NewReader(data), int64(len(data)), b3)
	require.NoError(t, err)
	last := len(l.Offsets) - 1
	for i := l.Offsets[last]; i < l.Offsets[last]+l.Counts[last]; i++ {
		data[i] ^= 0xa5
	}
	require.NoError(t, os.WriteFile(b3, data, 0o644))

	scenes, err := discoverScenes(in)
	require.NoError(t, err)
	sum, out := runScenes(t, scenes, backend.CPU, 16)
	assert.Equal(t, []int{2, 1, 1}, []int{sum.In, sum.Done, sum.Failed})
	failures := readFailures(t, out)
	require.Len(t, failures, 1)
	assert.Equal(t, raster.StepRead.Name(), failures[0].Step)
	assert.Contains(t, failures[0].Reason, b3+": corrupt or truncated TIFF: block 19")
	assert.Equal(t, int64(2*20), sum.Steps[1].Batches, "read: one window per 16x16 tile")
	for _, f := range files(t, out) {
		assert.False(t, strings.HasPrefix(f, bad), "left behind: %s", f)
		assert.NotContains(t, f, ".tmp", "temporary left behind: %s", f)
	}
	assert.NoDirExists(t, filepath.Join(out, bad))
	assert.FileExists(t, filepath.Join(out, good, "ndvi.npy"))
}

// Tiled and stripped band files of one scene, and any tile size, give the
// same outputs.
func TestLayoutsAndTileSizesAgree(t *testing.T) {
	in := t.TempDir()
	id := "LC08_L1TP_000003_20200101_20200101_01_T1"
	layouts := map[string]rastertest.TIFF{
		"stripped": {BlockH: 3, Compression: rastertest.LZW, Predictor: true},
		"tiled":    {Tiled: true, BlockW: 32, BlockH: 16, Compression: rastertest.Deflate},
	}
	for name, lt := range layouts {
		require.NoError(t, rastertest.WriteScene(filepath.Join(in, name, id), rastertest.Scene{ProductID: id, Width: 97, Height: 71, TIFF: lt}))
	}
	var outs []string
	for _, c := range []struct {
		layout string
		tile   int
	}{{"stripped", 16}, {"tiled", 32}, {"tiled", 64}, {"stripped", 4096}} {
		_, out := runScenes(t, []string{filepath.Join(in, c.layout, id)}, backend.CPU, c.tile)
		outs = append(outs, out)
	}
	for _, name := range sceneOutputs {
		first, err := os.ReadFile(filepath.Join(outs[0], id, name))
		require.NoError(t, err)
		for _, o := range outs[1:] {
			other, err := os.ReadFile(filepath.Join(o, id, name))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(first, other), "%s differs between %s and %s", name, outs[0], o)
		}
	}
}

// copyToMemfs copies a local directory's files to memfs under prefix.
func copyToMemfs(t *testing.T, src, prefix string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		memfs.Write(prefix+"/"+e.Name(), data)
	}
}

func readMemfs(t *testing.T, path string) []byte {
	t.Helper()
	ctx := context.Background()
	fsys, err := filesystem.New(ctx, path)
	require.NoError(t, err)
	defer fsys.Close()
	r, err := fsys.OpenRead(ctx, path)
	require.NoError(t, err, path)
	defer r.Close()
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	return data
}

func listMemfs(t *testing.T, glob string) []string {
	t.Helper()
	names, err := jobfiles.List(context.Background(), glob)
	require.NoError(t, err)
	sort.Strings(names)
	return names
}

// An object store (memfs here; Cloud Storage on Dataflow): scenes are read
// at offsets through Beam's filesystems, tiles are full-width row strips
// written as objects and joined in row order, and the outputs are those of a
// local run, byte for byte, with no part left behind.
func TestObjectStoreInputAndOutput(t *testing.T) {
	copyToMemfs(t, sceneDir(), "memfs://obj-in/"+scene)
	_, local := runScenes(t, []string{sceneDir()}, backend.CPU, 16)

	var buf bytes.Buffer
	out := "memfs://obj-out/run"
	sum, err := execute(context.Background(), Config{Scenes: []string{"memfs://obj-in/" + scene}, Output: out, TileSize: 16}, selector(t, backend.CPU), &buf)
	require.NoError(t, err, buf.String())
	assert.Equal(t, 1, sum.Done, buf.String())
	for _, name := range sceneOutputs {
		want, err := os.ReadFile(filepath.Join(local, scene, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, readMemfs(t, out+"/"+scene+"/"+name)), name)
	}
	var want []string
	for _, n := range sceneOutputs {
		want = append(want, out+"/"+scene+"/"+n)
	}
	sort.Strings(want)
	assert.Equal(t, want, listMemfs(t, out+"/"+scene+"/*"), "only the outputs: no part or temporary")
	assert.Equal(t, int64(3), sum.Steps[1].Batches, "read: three full-width row strips of 16 rows")
}

// fakeComposer joins memfs objects as Cloud Storage's compose would,
// refusing more than max sources a call, and records the calls.
type fakeComposer struct {
	mu    sync.Mutex
	max   int
	calls [][]string
}

func (c *fakeComposer) MaxSources() int { return c.max }

func (c *fakeComposer) Compose(ctx context.Context, dst string, srcs []string) error {
	c.mu.Lock()
	c.calls = append(c.calls, srcs)
	c.mu.Unlock()
	if len(srcs) > c.max {
		return io.ErrShortBuffer
	}
	var all []byte
	for _, s := range srcs {
		fsys, _ := filesystem.New(ctx, s)
		r, err := fsys.OpenRead(ctx, s)
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(r)
		all = append(all, data...)
	}
	memfs.Write(dst, all)
	return nil
}

// Where the store composes (Cloud Storage), the row strips are joined by
// composing at most its limit of objects a call, in a tree: with a limit of
// 3 and 9 strips plus the header, through intermediate objects, removed
// after. The arrays are those of a local run.
func TestComposeTree(t *testing.T) {
	fake := &fakeComposer{max: 3}
	jobfiles.RegisterComposer("memfs", func(context.Context) (jobfiles.Composer, error) { return fake, nil })
	defer jobfiles.RegisterComposer("memfs", nil)

	dir := t.TempDir()
	id := "LC08_L1TP_000004_20200101_20200101_01_T1"
	require.NoError(t, rastertest.WriteScene(filepath.Join(dir, id), rastertest.Scene{ProductID: id, Width: 45, Height: 70,
		TIFF: rastertest.TIFF{BlockH: 5, Compression: rastertest.Deflate}}))
	copyToMemfs(t, filepath.Join(dir, id), "memfs://compose-in/"+id)
	_, local := runScenes(t, []string{filepath.Join(dir, id)}, backend.CPU, 8)

	out := "memfs://compose-out"
	var buf bytes.Buffer
	sum, err := execute(context.Background(), Config{Scenes: []string{"memfs://compose-in/" + id}, Output: out, TileSize: 8}, selector(t, backend.CPU), &buf)
	require.NoError(t, err, buf.String())
	require.Equal(t, 1, sum.Done, buf.String())
	for _, p := range planeNames {
		want, err := os.ReadFile(filepath.Join(local, id, planeFile(p)))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, readMemfs(t, out+"/"+id+"/"+planeFile(p))), p)
	}
	require.NotEmpty(t, fake.calls)
	for _, c := range fake.calls {
		assert.LessOrEqual(t, len(c), 3, "compose of %v", c)
	}
	assert.Len(t, fake.calls, 5*5, "per plane: 10 objects in 4 groups, then 4 in 2, then 2")
	assert.Len(t, listMemfs(t, out+"/"+id+"/*"), len(sceneOutputs), "intermediate objects removed")
}

// A stub run says so: in its summary, in summary.json, and by writing
// under out/stub/landsat when no --output is given.
func TestStubRunSaysSo(t *testing.T) {
	var buf bytes.Buffer
	out := t.TempDir()
	_, err := execute(context.Background(), Config{Scenes: []string{sceneDir()}, Output: out, TileSize: 16}, selector(t, backend.Stub), &buf)
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "STUB RUN: scan, read, toa_ndvi, composite ran stand-ins")
	var rs runSummary
	data, err := os.ReadFile(filepath.Join(out, summaryFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rs))
	assert.True(t, rs.Stub)
	assert.Equal(t, []string{"scan", "read", "toa_ndvi", "composite"}, rs.StubSteps)

	_, err = execute(context.Background(), Config{Scenes: []string{sceneDir()}, Output: t.TempDir(), TileSize: 16}, selector(t, backend.CPU), &buf)
	require.NoError(t, err)
	assert.NotContains(t, buf.String()[strings.LastIndex(buf.String(), "scenes:"):], "STUB")

	assert.Equal(t, stubOutput, outputDir(true, false))
	assert.Equal(t, defaultOutput, outputDir(true, true), "--output given")
	assert.Equal(t, defaultOutput, outputDir(false, false))
}
