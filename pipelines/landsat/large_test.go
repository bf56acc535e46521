//go:build large

// The full-size tests: `make test-large` (go test -tags large). They write
// a full-size synthetic Landsat 8 scene (7791 x 7941 pixels, bands 2 to 5,
// the crop's real MTL, a no-data frame) in a tiled and a stripped layout,
// run the CPU pipeline on prism in a process of its own, and check its
// outputs against the formulas on sampled pixels and its peak memory.

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/raster/rastertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Memory targets: a full scene under 2 GB (about 32 bytes a pixel: its DNs
// and one float plane), four at once under 4 GB.
const (
	maxRSSOneScene   = 2 << 30
	maxRSSFourScenes = 4 << 30
)

// Layouts of the full-size scene: Deflate in 256 x 256 tiles (as Collection
// 2 COGs), and Deflate strips of one row (as GDAL writes stripped files).
var fullLayouts = map[string]rastertest.TIFF{
	"tiled":    {Tiled: true, BlockW: 256, BlockH: 256, Compression: rastertest.Deflate, Level: 1},
	"stripped": {BlockH: 1, Compression: rastertest.Deflate, Level: 1},
}

func fullID(n int) string { return fmt.Sprintf("LC08_L1TP_%06d_20200101_20200101_01_T1", n) }

var (
	fullOnce sync.Once
	fullDir  string
	fullErr  error
)

// fullScenes writes the full-size scene once per test process in each
// layout, in a temporary directory removed when the tests end.
func fullScenes(tb testing.TB) string {
	fullOnce.Do(func() {
		fullDir, fullErr = os.MkdirTemp("", "landsat-full-")
		if fullErr != nil {
			return
		}
		afterAll = append(afterAll, func() { os.RemoveAll(fullDir) })
		for name, lt := range fullLayouts {
			start := time.Now()
			dir := filepath.Join(fullDir, name, fullID(1))
			if fullErr = rastertest.WriteScene(dir, rastertest.Scene{ProductID: fullID(1), TIFF: lt}); fullErr != nil {
				return
			}
			tb.Logf("wrote the %s full-size scene in %s", name, time.Since(start).Round(time.Millisecond))
		}
	})
	require.NoError(tb, fullErr)
	return fullDir
}

// procRun is one pipeline process: its summary line, peak RSS, wall and CPU time.
type procRun struct {
	summary   string
	peakRSS   int64 // bytes
	wall, cpu time.Duration
}

// runPipeline runs the pipeline on input into output in a process of its
// own (this test binary, see runMainEnv).
func runPipeline(tb testing.TB, input, output string, extra ...string) procRun {
	args := append([]string{"--input=" + input, "--output=" + output, "--backend=cpu", "--progress=0"}, extra...)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"="+strings.Join(args, "\n"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	require.NoError(tb, err, "pipeline: %s", lastLines(out.String(), 30))
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r := procRun{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "scenes: ") {
			r.summary = line
		}
		if kb, ok := strings.CutPrefix(line, "peak RSS: "); ok {
			_, err := fmt.Sscanf(kb, "%d kB", &r.peakRSS)
			require.NoError(tb, err, line)
			r.peakRSS *= 1024
		}
	}
	require.NotZero(tb, r.peakRSS, "the pipeline process reports its peak RSS")
	tb.Logf("pipeline: %s\n%s", r.summary, stepLines(out.String()))
	return r
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// stepLines is the per-step table of the pipeline's summary.
func stepLines(s string) string {
	var out []string
	in := false
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "step  impl") {
			in = true
		}
		if in && !strings.Contains(line, "level=") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// One full-size scene in each layout: the pipeline stays under 2 GB, and
// its arrays, statistics and pictures are right.
func TestFullSizeScene(t *testing.T) {
	root := fullScenes(t)
	for _, layout := range []string{"tiled", "stripped"} {
		t.Run(layout, func(t *testing.T) {
			in := filepath.Join(root, layout, fullID(1))
			out := t.TempDir()
			r := runPipeline(t, in, out)
			px := float64(rastertest.FullWidth * rastertest.FullHeight)
			t.Logf("%s: peak RSS %.0f MB (%.1f bytes a pixel), wall %s, %.1f Mpx/s, CPU %s (%.0f%% of %d cores)",
				layout, float64(r.peakRSS)/1e6, float64(r.peakRSS)/px, r.wall.Round(time.Millisecond), px/1e6/r.wall.Seconds(),
				r.cpu.Round(time.Millisecond), 100*r.cpu.Seconds()/r.wall.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU())
			assert.Contains(t, r.summary, "scenes: 1 in, 1 done, 0 failed")
			assert.Less(t, r.peakRSS, int64(maxRSSOneScene), "peak RSS of one full-size scene")
			checkFullOutputs(t, in, filepath.Join(out, fullID(1)))
		})
	}
}

// Four full-size scenes at once stay under 4 GB.
func TestFullSizeFourScenes(t *testing.T) {
	root := fullScenes(t)
	src := filepath.Join(root, "tiled", fullID(1))
	in := t.TempDir()
	for n := 1; n <= 4; n++ {
		dir := filepath.Join(in, fullID(n))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		mtl, err := rastertest.MTL(fullID(n), rastertest.FullWidth, rastertest.FullHeight)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fullID(n)+"_MTL.txt"), []byte(mtl), 0o644))
		for _, b := range raster.DefaultBands {
			require.NoError(t, os.Link(filepath.Join(src, fmt.Sprintf("%s_B%d.TIF", fullID(1), b)), filepath.Join(dir, fmt.Sprintf("%s_B%d.TIF", fullID(n), b))))
		}
	}
	out := t.TempDir()
	r := runPipeline(t, in, out)
	px := 4 * float64(rastertest.FullWidth*rastertest.FullHeight)
	t.Logf("4 scenes: peak RSS %.0f MB, wall %s, %.1f Mpx/s", float64(r.peakRSS)/1e6, r.wall.Round(time.Millisecond), px/1e6/r.wall.Seconds())
	assert.Contains(t, r.summary, "scenes: 4 in, 4 done, 0 failed")
	assert.Less(t, r.peakRSS, int64(maxRSSFourScenes), "peak RSS of four full-size scenes at once")
}

// checkFullOutputs compares the outputs of the scene in dir (bands in in)
// with the formulas, in float64, on 20000 sampled pixels (and the whole
// no-data count), with the DNs decoded by golang.org/x/image/tiff.
func checkFullOutputs(t *testing.T, in, dir string) {
	w, h := rastertest.FullWidth, rastertest.FullHeight
	sin := math.Sin(58.99675180 * math.Pi / 180)
	dn := map[int][]uint16{}
	for _, b := range raster.DefaultBands {
		f, err := os.Open(filepath.Join(in, fmt.Sprintf("%s_B%d.TIF", fullID(1), b)))
		require.NoError(t, err)
		bw, bh, d, err := raster.DecodeBand(bufio.NewReader(f), f.Name())
		f.Close()
		require.NoError(t, err)
		require.Equal(t, []int{w, h}, []int{bw, bh})
		dn[b] = d
	}
	toa := func(b, i int) float64 {
		if dn[b][i] == 0 {
			return math.NaN()
		}
		return (2e-5*float64(dn[b][i]) - 0.1) / sin
	}
	r := rand.New(rand.NewPCG(11, 12))
	samples := []int{0, w - 1, (h - 1) * w, w*h - 1, (h/2)*w + w/2}
	for len(samples) < 20000 {
		samples = append(samples, r.IntN(w*h))
	}
	open := func(name string) *os.File {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	hdr := len(npyHeader(h, w))
	at := func(f *os.File, i int) float64 {
		var b [4]byte
		_, err := f.ReadAt(b[:], int64(hdr)+4*int64(i))
		require.NoError(t, err)
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[:])))
	}
	planes := map[int]*os.File{}
	for _, b := range raster.DefaultBands {
		planes[b] = open(fmt.Sprintf("reflectance_B%d.npy", b))
	}
	ndvi := open("ndvi.npy")
	nodata := 0
	for _, i := range samples {
		for _, b := range raster.DefaultBands {
			want, got := toa(b, i), at(planes[b], i)
			if math.IsNaN(want) {
				require.True(t, math.IsNaN(got), "band %d pixel %d: no-data", b, i)
				nodata++
				continue
			}
			require.InEpsilon(t, want, got, 6e-8, "band %d pixel %d", b, i)
		}
		r4, r5 := toa(4, i), toa(5, i)
		if want, got := (r5-r4)/(r5+r4), at(ndvi, i); math.IsNaN(want) {
			require.True(t, math.IsNaN(got), "NDVI pixel %d", i)
		} else {
			require.InDelta(t, want, got, 2e-7, "NDVI pixel %d", i)
		}
	}
	assert.Greater(t, nodata, 1000, "samples fall in the no-data frame")

	var st sceneStats
	data, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &st))
	for _, b := range raster.DefaultBands {
		valid, sum := 0, 0.0
		for i, v := range dn[b] {
			if v != 0 {
				valid++
				sum += float64(float32(toa(b, i)))
			}
		}
		js := st.Reflectance[raster.BandName(b)]
		assert.Equal(t, valid, js.Valid, "band %d valid pixels", b)
		assert.Equal(t, w*h-valid, js.NoData, "band %d no-data", b)
		assert.InEpsilon(t, sum/float64(valid), *js.Mean, 1e-9, "band %d mean", b)
	}

	for name, side := range map[string]int{"ndvi.png": w, "truecolor.png": w, "truecolor_preview.png": 1948} {
		f := open(name)
		cfg, err := png.DecodeConfig(f)
		require.NoError(t, err, name)
		assert.Equal(t, side, cfg.Width, name)
	}
	f := open("truecolor_preview.png")
	f.Seek(0, io.SeekStart)
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.LessOrEqual(t, max(img.Bounds().Dx(), img.Bounds().Dy()), maxPreviewSide)
}

// BenchmarkFullScene runs one full-size scene (the tiled layout) through
// the CPU pipeline on prism, in a process of its own, and in the same run
// two ceilings on the same files: a plain read of the band files, and a
// decode-only pass (scan, then every window decoded, on every core, nothing
// written). It reports megapixels per second, the peak RSS, the CPU use,
// and ratio_decode_to_pipeline = decode-only time / pipeline time and
// ratio_read_to_pipeline = read time / pipeline time (1 would be as fast as
// the ceiling).
func BenchmarkFullScene(b *testing.B) {
	root := fullScenes(b)
	in := filepath.Join(root, "tiled", fullID(1))
	px := float64(rastertest.FullWidth * rastertest.FullHeight)
	var pipe, read, decode, cpu time.Duration
	var rss int64
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for _, band := range raster.DefaultBands {
			f, err := os.Open(filepath.Join(in, fmt.Sprintf("%s_B%d.TIF", fullID(1), band)))
			require.NoError(b, err)
			_, err = io.Copy(io.Discard, f)
			f.Close()
			require.NoError(b, err)
		}
		read += time.Since(start)

		start = time.Now()
		decodeOnly(b, in)
		decode += time.Since(start)

		out := b.TempDir()
		r := runPipeline(b, in, out)
		pipe += r.wall
		cpu += r.cpu
		rss = max(rss, r.peakRSS)
		os.RemoveAll(out)
	}
	n := float64(b.N)
	b.ReportMetric(px*n/1e6/pipe.Seconds(), "Mpx/s")
	b.ReportMetric(px*n/1e6/decode.Seconds(), "decode-Mpx/s")
	b.ReportMetric(float64(rss)/1e6, "peak-RSS-MB")
	b.ReportMetric(100*cpu.Seconds()/pipe.Seconds()/float64(runtime.NumCPU()), "cpu-use-%")
	b.ReportMetric(decode.Seconds()/pipe.Seconds(), "ratio_decode_to_pipeline")
	b.ReportMetric(read.Seconds()/pipe.Seconds(), "ratio_read_to_pipeline")
}

// decodeOnly scans the scene and decodes every window, GOMAXPROCS at a time.
func decodeOnly(tb testing.TB, dir string) {
	sc, err := raster.ScanScene(raster.SceneRef{Dir: dir, TileSize: 512, Bands: raster.DefaultBands})
	require.NoError(tb, err)
	work := make(chan raster.Window)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				if _, err := raster.ReadWindow(w); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	for _, w := range sc.Windows {
		work <- w
	}
	close(work)
	wg.Wait()
	require.NoError(tb, firstErr)
}
