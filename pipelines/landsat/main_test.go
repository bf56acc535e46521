package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/sbinet/npyio/npy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runMainEnv makes the test binary run the pipeline's main with the
// arguments it holds (separated by newlines): the full-size tests run the
// pipeline in a process of its own, to measure its peak memory.
const runMainEnv = "BEAMGPU_LANDSAT_TEST_MAIN"

// jobMainEnv makes the test binary run the pipeline's main() itself (job.Main:
// signals, exit statuses) with the arguments it holds, one a line.
const jobMainEnv = "BEAMGPU_LANDSAT_TEST_JOBMAIN"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(jobMainEnv); ok {
		os.Args = append([]string{"landsat"}, strings.Split(args, "\n")...)
		main()
	}
	if args, ok := os.LookupEnv(runMainEnv); ok {
		os.Args = append([]string{"landsat"}, strings.Split(args, "\n")...)
		flag.Parse()
		beam.Init()
		code, err := run(context.Background(), os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "landsat:", err)
		}
		// The peak RSS of this process since it started (VmHWM): the
		// parent's wait4 figure would include the parent's own peak, which
		// Linux carries into the child across exec.
		if status, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				if strings.HasPrefix(line, "VmHWM:") {
					fmt.Println("peak RSS:", strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
				}
			}
		}
		os.Exit(code)
	}
	steptest.MaybeServe() // this binary also serves as the tests' GPU executor
	flags.Progress = 0
	code := ptest.MainRet(m)
	for _, f := range afterAll {
		f()
	}
	os.Exit(code)
}

// afterAll runs after every test of the binary (removing shared test data).
var afterAll []func()

const scene = raster.SampleSceneID

func sceneDir() string { return filepath.Join("testdata", scene) }

func selector(t *testing.T, def backend.Kind) *backend.Selector {
	t.Helper()
	sel, err := backend.New(backend.Config{Default: def, Steps: step.Backends(pipelineSteps...)})
	require.NoError(t, err)
	return sel
}

func runScenes(t *testing.T, scenes []string, def backend.Kind, tile int) (summary, string) {
	t.Helper()
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := execute(context.Background(), Config{Scenes: scenes, Output: out, TileSize: tile}, selector(t, def), &buf)
	require.NoError(t, err)
	t.Log("\n" + buf.String())
	return sum, out
}

func readNPY(t *testing.T, path string) ([]float32, []int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := npy.NewReader(f)
	require.NoError(t, err)
	require.Equal(t, "<f4", r.Header.Descr.Type, path)
	var data []float32
	require.NoError(t, r.Read(&data))
	return data, r.Header.Descr.Shape
}

// reference computes the TOA reflectance of a band of the committed scene from
// the formula, in float64, from the band's DNs and the MTL's coefficients
// (read here independently of the pipeline's own MTL parser).
func reference(t *testing.T, band int) []float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(sceneDir(), scene+"_B"+string(rune('0'+band))+".TIF"))
	require.NoError(t, err)
	defer f.Close()
	_, _, dn, err := raster.DecodeBand(f, f.Name())
	require.NoError(t, err)
	mtl := map[string]float64{}
	m, err := os.ReadFile(filepath.Join(sceneDir(), scene+"_MTL.txt"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(m), "\n") {
		var key string
		var v float64
		if n, _ := fmtSscan(line, &key, &v); n == 2 {
			mtl[key] = v
		}
	}
	sun := mtl["SUN_ELEVATION"]
	require.Equal(t, 58.99675180, sun)
	mult, add := mtl["REFLECTANCE_MULT_BAND_"+string(rune('0'+band))], mtl["REFLECTANCE_ADD_BAND_"+string(rune('0'+band))]
	out := make([]float64, len(dn))
	for i, v := range dn {
		if v == 0 {
			out[i] = math.NaN()
			continue
		}
		out[i] = (mult*float64(v) + add) / math.Sin(sun*math.Pi/180)
	}
	return out
}

// The embedded scene end to end on prism: every output is there and the
// arrays and statistics match the formulas computed here in float64 to
// float32 precision.
func TestEmbeddedSceneEndToEnd(t *testing.T) {
	sum, out := runScenes(t, []string{sceneDir()}, backend.CPU, 16)
	assert.Equal(t, []int{1, 1, 0}, []int{sum.In, sum.Done, sum.Failed})
	dir := filepath.Join(out, scene)
	for _, name := range sceneOutputs {
		assert.FileExists(t, filepath.Join(dir, name))
	}

	refl := map[int][]float64{}
	for _, b := range []int{2, 3, 4, 5} {
		refl[b] = reference(t, b)
		got, shape := readNPY(t, filepath.Join(dir, "reflectance_B"+string(rune('0'+b))+".npy"))
		require.Equal(t, []int{41, 41}, shape)
		for i, want := range refl[b] {
			require.InEpsilon(t, want, float64(got[i]), 6e-8, "band %d pixel %d", b, i) // float32 rounding
		}
	}
	ndvi, shape := readNPY(t, filepath.Join(dir, "ndvi.npy"))
	require.Equal(t, []int{41, 41}, shape)
	var ndviSum float64
	for i := range ndvi {
		want := (refl[5][i] - refl[4][i]) / (refl[5][i] + refl[4][i])
		require.InDelta(t, want, float64(ndvi[i]), 2e-7, "pixel %d", i)
		ndviSum += want
	}

	var st sceneStats
	data, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &st))
	assert.Equal(t, 41, st.Width)
	assert.Equal(t, 1681, st.Pixels)
	b4 := st.Reflectance["B4"]
	assert.Equal(t, 1681, b4.Valid)
	assert.Equal(t, 0, b4.NoData)
	// GDAL's statistics of band 4: DN 6600..15257, mean 8367.9369422963.
	s := math.Sin(58.99675180 * math.Pi / 180)
	assert.InEpsilon(t, (2e-5*6600-0.1)/s, *b4.Min, 1e-7)
	assert.InEpsilon(t, (2e-5*15257-0.1)/s, *b4.Max, 1e-7)
	assert.InEpsilon(t, (2e-5*8367.9369422963-0.1)/s, *b4.Mean, 1e-6)
	assert.InEpsilon(t, ndviSum/1681, *st.NDVI.Mean, 1e-6)

	for _, name := range []string{"truecolor.png", "ndvi.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, 41, img.Bounds().Dx(), name)
	}
	failed, err := os.ReadFile(filepath.Join(out, failedFile))
	require.NoError(t, err)
	assert.Empty(t, failed)
}

// Tile size does not change the result: one tile or many. With many, the
// toa_ndvi step writes tiles into the planes of tiles it emitted before
// (the pipeline's consumers keep none: step.RecycleOutputs), and hands
// every tile back.
func TestTileSizeDoesNotChangeOutputs(t *testing.T) {
	_, one := runScenes(t, []string{sceneDir()}, backend.CPU, 4096)
	sum, many := runScenes(t, []string{sceneDir()}, backend.CPU, 7)
	assert.Equal(t, int64(6*6), sum.Metrics.Counters[raster.StepTOANDVI.Name()+"."+stepbeam.MetricRecycled], "tiles handed back")
	for _, name := range []string{"reflectance_B2.npy", "ndvi.npy", "truecolor.png", "stats.json"} {
		a, err := os.ReadFile(filepath.Join(one, scene, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(many, scene, name))
		require.NoError(t, err)
		assert.Equal(t, a, b, name)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dst, 0o755))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
}

// A directory of scenes, three of them broken: the good one completes, each
// broken one is in failed.jsonl with the file and the reason, and the counts
// reconcile.
func TestMultiSceneRunReportsFailuresAndReconciles(t *testing.T) {
	in := t.TempDir()
	copyDir(t, sceneDir(), filepath.Join(in, "a_good"))

	trunc := filepath.Join(in, "b_truncated")
	copyDir(t, sceneDir(), trunc)
	b3 := filepath.Join(trunc, scene+"_B3.TIF")
	data, err := os.ReadFile(b3)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b3, data[:len(data)/2], 0o644))

	nocoef := filepath.Join(in, "c_missing_coefficient")
	copyDir(t, sceneDir(), nocoef)
	mtlPath := filepath.Join(nocoef, scene+"_MTL.txt")
	mtl, err := os.ReadFile(mtlPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(mtlPath, []byte(strings.Replace(string(mtl), "REFLECTANCE_ADD_BAND_4", "REFLECTANCE_ADD_BAND_X", 1)), 0o644))

	require.NoError(t, os.MkdirAll(filepath.Join(in, "d_not_a_scene"), 0o755))

	scenes, err := discoverScenes(in)
	require.NoError(t, err)
	require.Len(t, scenes, 4)
	sum, out := runScenes(t, scenes, backend.CPU, 16)
	assert.Equal(t, 4, sum.In)
	assert.Equal(t, 1, sum.Done)
	assert.Equal(t, 3, sum.Failed)

	f, err := os.Open(filepath.Join(out, failedFile))
	require.NoError(t, err)
	defer f.Close()
	var failures []step.Failure
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var fl step.Failure
		require.NoError(t, json.Unmarshal(sc.Bytes(), &fl))
		failures = append(failures, fl)
	}
	require.Len(t, failures, 3)
	byInput := map[string]step.Failure{}
	for _, fl := range failures {
		assert.Equal(t, "scan", fl.Step, "failures are found before any pixel is decoded")
		byInput[fl.Input] = fl
	}
	assert.Contains(t, byInput[trunc].Reason, b3+": corrupt or truncated TIFF")
	assert.NoDirExists(t, filepath.Join(out, "b_truncated"))
	assert.Contains(t, byInput[nocoef].Reason, "missing REFLECTANCE_ADD_BAND_4")
	assert.Contains(t, byInput[filepath.Join(in, "d_not_a_scene")].Reason, "no *_MTL.txt metadata file")

	var rs runSummary
	data, err = os.ReadFile(filepath.Join(out, summaryFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rs))
	assert.Equal(t, []string{scene}, rs.Done)
	assert.Len(t, rs.Failed, 3)
	assert.FileExists(t, filepath.Join(out, scene, "ndvi.npy"))
}

// --backend=stub runs the pipeline's plumbing: outputs of the real shape, zero values.
func TestStubBackend(t *testing.T) {
	sum, out := runScenes(t, []string{sceneDir()}, backend.Stub, 16)
	assert.Equal(t, 1, sum.Done)
	ndvi, shape := readNPY(t, filepath.Join(out, scene, "reflectance_B4.npy"))
	assert.Equal(t, []int{41, 41}, shape)
	for _, v := range ndvi {
		require.Zero(t, v)
	}
	for _, st := range sum.Steps {
		assert.Equal(t, backend.Stub, st.Impl, st.Step)
	}
}

func TestGPUBackendFailsAtConstruction(t *testing.T) {
	_, err := backend.New(backend.Config{Default: backend.GPU, Steps: step.Backends(pipelineSteps...)})
	assert.ErrorContains(t, err, "backend gpu requested but no GPU can be had")
}

func TestOutputDirectoryErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	err := jobfiles.CheckWritable("output", filepath.Join(file, "out"), "0123456789ab")
	assert.ErrorContains(t, err, "--output "+filepath.Join(file, "out")+": cannot create the directory")

	_, err = discoverScenes(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorContains(t, err, "no such file or directory")
	_, err = discoverScenes(t.TempDir())
	assert.ErrorContains(t, err, "neither a scene directory")
}

// --strict turns a failed scene into exit status 1; without it the run succeeds.
func TestStrict(t *testing.T) {
	in := t.TempDir()
	copyDir(t, sceneDir(), filepath.Join(in, "good"))
	require.NoError(t, os.MkdirAll(filepath.Join(in, "bad"), 0o755))
	*input, *output = in, t.TempDir()
	defer func() { *input, *output, *strict = "", "out/landsat", false }()

	var buf bytes.Buffer
	code, err := run(context.Background(), &buf)
	require.NoError(t, err)
	assert.Equal(t, 0, code)

	*strict = true
	code, err = run(context.Background(), &buf)
	assert.Equal(t, 1, code)
	assert.ErrorContains(t, err, "--strict: 1 of 2 scenes failed")
}

func TestEmbeddedDefaultInput(t *testing.T) {
	*output = t.TempDir()
	defer func() { *output = "out/landsat" }()
	var buf bytes.Buffer
	code, err := run(context.Background(), &buf)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, buf.String(), "scenes: 1 in, 1 done, 0 failed")
	assert.FileExists(t, filepath.Join(*output, scene, "truecolor.png"))
}

// --backend=gpu through an out-of-process executor writes the CPU's outputs,
// byte for byte.
func TestGPUBackendMatchesCPU(t *testing.T) {
	_, cpu := runScenes(t, []string{sceneDir()}, backend.CPU, 16)
	sel, err := backend.New(backend.Config{Default: backend.GPU, Steps: step.Backends(pipelineSteps...), Executor: steptest.UseExecutor()})
	require.NoError(t, err)
	gpu := t.TempDir()
	var buf bytes.Buffer
	sum, err := execute(context.Background(), Config{Scenes: []string{sceneDir()}, Output: gpu, TileSize: 16}, sel, &buf)
	require.NoError(t, err, buf.String())
	assert.Equal(t, 1, sum.Done)
	for _, st := range sum.Steps {
		want := backend.CPU // steps without a GPU op: scan, read
		if s, _ := step.Lookup(st.Step); s.Backend().GPUOp != "" {
			want = backend.GPU
		}
		assert.Equal(t, want, st.Impl, st.Step)
	}
	for _, name := range sceneOutputs {
		a, err := os.ReadFile(filepath.Join(cpu, scene, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(gpu, scene, name))
		require.NoError(t, err)
		assert.Equal(t, a, b, name)
	}
}

// Scenes on an object store (memfs here, Cloud Storage on Dataflow) are
// found through Beam's filesystems: a scene prefix, or a prefix of scenes.
func TestDiscoverRemoteScenes(t *testing.T) {
	for _, name := range []string{"memfs://b/one/S1_MTL.txt", "memfs://b/one/S1_B4.TIF",
		"memfs://b/many/S1/S1_MTL.txt", "memfs://b/many/S2/S2_MTL.txt", "memfs://b/many/S2/S2_B4.TIF",
		"memfs://b/many/readme.txt", "memfs://b/empty/readme.txt"} {
		memfs.Write(name, []byte("x"))
	}
	got, err := discoverScenes("memfs://b/one/")
	require.NoError(t, err)
	assert.Equal(t, []string{"memfs://b/one"}, got)
	got, err = discoverScenes("memfs://b/many")
	require.NoError(t, err)
	assert.Equal(t, []string{"memfs://b/many/S1", "memfs://b/many/S2"}, got)
	_, err = discoverScenes("memfs://b/empty")
	assert.ErrorContains(t, err, "neither a scene")
}

// On an executor with three (virtual) devices, --backend=gpu writes the
// CPU's outputs byte for byte, the GPU steps' batches spread over the three,
// and the run summary (printed, and summary.json) counts each device's
// batches, bytes and busy time; the counts reconcile with the steps'. With
// device 1 lost after its first batch, the outputs are still the CPU's and every
// batch is counted once, on a device that served it.
func TestGPUBackendOnSeveralDevices(t *testing.T) {
	_, cpu := runScenes(t, []string{sceneDir()}, backend.CPU, 16)
	for name, env := range map[string][]string{
		"three devices":               {executor.EnvReferenceDevices, "3"},
		"device 1 lost after 1 batch": {executor.EnvReferenceDevices, "3", executor.EnvReferenceFailDevice, "1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			for i := 0; i < len(env); i += 2 {
				t.Setenv(env[i], env[i+1])
			}
			require.NoError(t, client.CloseShared())
			t.Cleanup(func() { client.CloseShared() })
			sel, err := backend.New(backend.Config{Default: backend.GPU, Steps: step.Backends(pipelineSteps...), Executor: steptest.UseExecutor()})
			require.NoError(t, err)
			gpu := t.TempDir()
			var buf bytes.Buffer
			sum, err := execute(context.Background(), Config{Scenes: []string{sceneDir()}, Output: gpu, TileSize: 16}, sel, &buf)
			require.NoError(t, err, buf.String())
			t.Log("\n" + buf.String())
			for _, name := range sceneOutputs {
				a, err := os.ReadFile(filepath.Join(cpu, scene, name))
				require.NoError(t, err)
				b, err := os.ReadFile(filepath.Join(gpu, scene, name))
				require.NoError(t, err)
				assert.Equal(t, a, b, name)
			}
			var gpuBatches int64
			for _, st := range sum.Steps {
				if st.Impl == backend.GPU {
					gpuBatches += st.Batches
				}
			}
			require.NotEmpty(t, sum.Devices, buf.String())
			var onDevices int64
			for _, d := range sum.Devices {
				assert.Greater(t, d.Batches, int64(0), "device %d", d.Device)
				assert.Greater(t, d.Bytes, int64(0))
				assert.Greater(t, d.BusyNS, int64(0))
				onDevices += d.Batches
			}
			assert.Equal(t, gpuBatches, onDevices, "each GPU batch ran once, on one device")
			if strings.Contains(name, "lost") {
				assert.Equal(t, int64(1), sum.Devices[1].Batches, "device 1 ran 1 batch, then none")
			} else {
				assert.Len(t, sum.Devices, 3)
			}
			assert.Contains(t, buf.String(), "GPU device  batches")
			var rs struct {
				Devices []job.DeviceCounts `json:"devices"`
			}
			js, err := os.ReadFile(filepath.Join(gpu, summaryFile))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(js, &rs))
			assert.Equal(t, sum.Devices, rs.Devices, "summary.json lists the devices")
		})
	}
}
