//go:build cuda

package cuda

// These tests need a GPU: the test binary imports gorgonia.org/cu, whose init()
// exits with status 1 where no GPU is usable (and the binary does not start without
// libcuda.so.1). Where there is none, compile them only:
//
//	go test -tags cuda -c -o /dev/null ./runtime/executor/cuda/
//
// On a GPU machine (CUDA driver R520+, compute capability 8.0+, libcublas.so.11):
//
//	go test -tags cuda -race -v ./runtime/executor/cuda/
//
// Every kernel runs against the CPU function of its step on random input. The
// tolerances: elementwise float32 results within a relative 1e-5 of the CPU's (they
// are computed with the same operations in the same precision, so in practice
// identical); Dense within 1e-5 of the sum of the magnitudes of the terms of each
// output (the products are summed in another order); Softmax within 1e-5 relative;
// Argmax exact; KNN distances within 1e-5 of qn + rn, and a neighbour may differ
// from the CPU's only where the two distances are that close; Composite levels
// within 1 of the CPU's (pow rounding), on at most 0.1% of the values.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"gorgonia.org/cu"
)

// dev is GPU 0, opened once for the tests.
var dev *Device

const fatalChildEnv = "BEAMGPU_CUDA_FATAL_CHILD"

func TestMain(m *testing.M) {
	var err error
	dev, err = Open(0, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cuda tests: open GPU 0:", err)
		os.Exit(1)
	}
	if os.Getenv(fatalChildEnv) == "" {
		fmt.Fprintln(os.Stderr, "cuda tests on", dev.Info())
	}
	code := m.Run()
	if err := dev.Close(); err != nil && os.Getenv(fatalChildEnv) == "" {
		fmt.Fprintln(os.Stderr, "cuda tests: close:", err)
		code = 1
	}
	os.Exit(code)
}

// checkFloats compares got with want: NaN where NaN, infinities equal, and
// |got - want| <= rel * scale(i) elsewhere (scale nil: |want[i]|). It reports the
// largest error found, relative to the scale.
func checkFloats(t *testing.T, what string, got, want []float32, rel float64, scale func(i int) float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst, bad := 0.0, 0
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) || math.IsNaN(g) || math.IsInf(w, 0) || math.IsInf(g, 0) {
			if !(math.IsNaN(w) && math.IsNaN(g)) && g != w {
				if bad++; bad <= 5 {
					t.Errorf("%s[%d] = %v, want %v", what, i, g, w)
				}
			}
			continue
		}
		s := math.Abs(w)
		if scale != nil {
			s = scale(i)
		}
		diff := math.Abs(g - w)
		if diff == 0 {
			continue
		}
		if r := diff / s; !(r <= rel) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, want %v (error %.3g of the scale %.3g, tolerance %g)", what, i, g, w, diff, s, rel)
			}
		} else {
			worst = max(worst, r)
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d values out of tolerance in all", what, bad)
	}
	t.Logf("%s: %d values, largest relative error %.3g", what, len(want), worst)
}

// randomDN returns n DNs, about 5% of them 0 (no-data).
func randomDN(r *rand.Rand, n int) []uint16 {
	dn := make([]uint16, n)
	for i := range dn {
		if r.IntN(20) != 0 {
			dn[i] = uint16(1 + r.IntN(65535))
		}
	}
	return dn
}

// randomDNTile is a w x h tile of the given bands with Landsat-like coefficients.
func randomDNTile(r *rand.Rand, w, h int, bands []int) raster.DNTile {
	t := raster.DNTile{Scene: "gpu-test", SceneW: w, SceneH: h, Rect: raster.Rect{W: w, H: h},
		SunElevation: 5 + 85*r.Float64()}
	for _, b := range bands {
		t.Cal = append(t.Cal, raster.Calibration{Band: b, Mult: 2e-5 * (0.5 + r.Float64()), Add: -0.1 + 0.02*r.Float64()})
		t.DN = append(t.DN, randomDN(r, w*h))
	}
	return t
}

// coefficients are the per-band scale and offset that raster.TOA computes.
func coefficients(t raster.DNTile) (scale, offset []float64) {
	sin := math.Sin(t.SunElevation * math.Pi / 180)
	for _, c := range t.Cal {
		scale = append(scale, c.Mult/sin)
		offset = append(offset, c.Add/sin)
	}
	return scale, offset
}

func TestTOA(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sz := range [][2]int{{1, 1}, {17, 3}, {517, 513}} {
		tile := randomDNTile(r, sz[0], sz[1], []int{4})
		want, err := raster.TOA(tile)
		if err != nil {
			t.Fatal(err)
		}
		scale, offset := coefficients(tile)
		got, err := dev.TOA(tile.DN[0], scale[0], offset[0])
		if err != nil {
			t.Fatal(err)
		}
		checkFloats(t, fmt.Sprintf("toa %dx%d", sz[0], sz[1]), got, want.Data[0], 1e-5, nil)
	}
}

func TestTOANDVI(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 1))
	bands := []int{2, 3, 4, 5}
	for _, sz := range [][2]int{{1, 1}, {33, 7}, {512, 512}, {300, 211}} {
		tile := randomDNTile(r, sz[0], sz[1], bands)
		refl, err := raster.TOA(tile)
		if err != nil {
			t.Fatal(err)
		}
		ndvi, err := raster.NDVITile(refl)
		if err != nil {
			t.Fatal(err)
		}
		scale, offset := coefficients(tile)
		gotRefl, gotNDVI, err := dev.TOANDVI(tile.DN, scale, offset, 2, 3) // B4, B5
		if err != nil {
			t.Fatal(err)
		}
		for b := range bands {
			checkFloats(t, fmt.Sprintf("toa_ndvi %dx%d %s", sz[0], sz[1], refl.Names[b]), gotRefl[b], refl.Data[b], 1e-5, nil)
		}
		checkFloats(t, fmt.Sprintf("toa_ndvi %dx%d NDVI", sz[0], sz[1]), gotNDVI, ndvi.Data[0], 1e-5, nil)
	}
	// Without NDVI.
	tile := randomDNTile(r, 40, 40, bands)
	refl, _ := raster.TOA(tile)
	scale, offset := coefficients(tile)
	gotRefl, gotNDVI, err := dev.TOANDVI(tile.DN, scale, offset, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if gotNDVI != nil {
		t.Errorf("NDVI computed without red and NIR planes")
	}
	checkFloats(t, "toa_ndvi without NDVI, B5", gotRefl[3], refl.Data[3], 1e-5, nil)
}

// reflTile is a tile of random reflectance planes named B2..B5, with NaNs, zeros
// and zero sums of B4 and B5.
func reflTile(r *rand.Rand, w, h int) raster.Tile {
	t := raster.Tile{Scene: "gpu-test", SceneW: w, SceneH: h, Rect: raster.Rect{W: w, H: h}}
	for _, b := range []int{2, 3, 4, 5} {
		p := make([]float32, w*h)
		for i := range p {
			switch r.IntN(50) {
			case 0:
				p[i] = float32(math.NaN())
			case 1:
				p[i] = 0
			default:
				p[i] = float32(-0.1 + 1.1*r.Float64())
			}
		}
		t.Names = append(t.Names, raster.BandName(b))
		t.Data = append(t.Data, p)
	}
	for i := 0; i < len(t.Data[2]); i += 97 {
		t.Data[3][i] = -t.Data[2][i] // B5 + B4 == 0
	}
	return t
}

func TestNDVI(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	tile := reflTile(r, 257, 259)
	want, err := raster.NDVITile(tile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dev.NDVI(tile.Data[2], tile.Data[3])
	if err != nil {
		t.Fatal(err)
	}
	checkFloats(t, "ndvi", got, want.Data[0], 1e-5, nil)
}

func TestComposite(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 1))
	for trial := range 4 {
		tile := reflTile(r, 311, 287)
		st := raster.Stretch{Scene: tile.Scene, Gamma: 0.5 + 2.5*r.Float64()}
		for range 3 {
			lo := float32(0.3 * r.Float64())
			st.Lo, st.Hi = append(st.Lo, lo), append(st.Hi, lo+0.01+float32(r.Float64()))
		}
		if trial == 3 {
			st.Hi[1] = st.Lo[1] // a degenerate stretch: all 0
		}
		want, err := raster.CompositeTile(raster.CompositeInput{Tile: tile, Stretch: st})
		if err != nil {
			t.Fatal(err)
		}
		plane := func(n string) []float32 { p, _ := tile.Plane(n); return p }
		got, err := dev.Composite(plane("B4"), plane("B3"), plane("B2"),
			[3]float32{st.Lo[0], st.Lo[1], st.Lo[2]}, [3]float32{st.Hi[0], st.Hi[1], st.Hi[2]}, st.Gamma)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.Pix) {
			t.Fatalf("composite: %d bytes, want %d", len(got), len(want.Pix))
		}
		off := 0
		for i := range got {
			g, w := int(got[i]), int(want.Pix[i])
			switch {
			case g == w:
			case i%4 == 3 || max(g-w, w-g) > 1:
				t.Fatalf("composite trial %d: byte %d (pixel %d channel %d) = %d, want %d", trial, i, i/4, i%4, g, w)
			default:
				off++
			}
		}
		if off*1000 > len(got) {
			t.Errorf("composite trial %d: %d of %d levels off by one", trial, off, len(got))
		}
		t.Logf("composite trial %d (gamma %.3f): %d of %d levels off by one", trial, st.Gamma, off, len(got))
	}
}

func randomBatch(r *rand.Rand, rows, cols int, lo, hi float64) tensor.Batch {
	b := tensor.Batch{Source: "gpu-test", Rows: rows, Cols: cols, X: make([]float32, rows*cols)}
	for i := range b.X {
		b.X[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return b
}

func TestStandardize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 1))
	b := randomBatch(r, 1000, 784, 0, 255)
	for i := 0; i < b.Rows; i++ {
		b.X[i*b.Cols] = 7 // a constant column: std floored
	}
	for _, s := range []tensor.Scaler{{Mode: tensor.ScaleUnit}, tensor.FitScaler(b)} {
		want, err := s.Apply(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dev.Standardize(b.X, b.Rows, b.Cols, s)
		if err != nil {
			t.Fatal(err)
		}
		checkFloats(t, "standardize "+s.Mode, got, want.X, 1e-5, nil)
	}
	if _, err := dev.Standardize(b.X, b.Rows, b.Cols, tensor.Scaler{Mode: "nope"}); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestDense(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 1))
	for _, c := range []struct {
		rows, in, out int
		relu          bool
	}{{300, 784, 256, true}, {37, 5, 3, false}, {1, 1, 1, true}, {1000, 128, 10, false}} {
		x := randomBatch(r, c.rows, c.in, -1, 1)
		layer := tensor.Dense{In: c.in, Out: c.out, W: randomBatch(r, c.in, c.out, -0.1, 0.1).X,
			B: randomBatch(r, 1, c.out, -0.5, 0.5).X, ReLU: c.relu}
		want, err := layer.Forward(x)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dev.Dense(x.X, x.Rows, layer.W, layer.B, c.in, c.out, c.relu)
		if err != nil {
			t.Fatal(err)
		}
		// The scale of output (i, j): the sum of the magnitudes of its terms.
		scale := func(k int) float64 {
			i, j := k/c.out, k%c.out
			s := math.Abs(float64(layer.B[j]))
			for l := 0; l < c.in; l++ {
				s += math.Abs(float64(x.X[i*c.in+l]) * float64(layer.W[l*c.out+j]))
			}
			return s
		}
		checkFloats(t, fmt.Sprintf("dense %dx%d->%d relu=%v", c.rows, c.in, c.out, c.relu), got, want.X, 1e-5, scale)
	}
}

func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	for _, cols := range []int{1, 10, 33, 100, 1000} {
		b := randomBatch(r, 517, cols, -20, 20)
		want, err := tensor.Softmax(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dev.Softmax(b.X, b.Rows, b.Cols)
		if err != nil {
			t.Fatal(err)
		}
		checkFloats(t, fmt.Sprintf("softmax %d columns", cols), got, want.X, 1e-5, nil)
	}
}

func TestArgmax(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	nan := float32(math.NaN())
	for _, cols := range []int{1, 10, 31, 32, 33, 200} {
		b := randomBatch(r, 1003, cols, -3, 3)
		for i := 0; i < b.Rows; i++ {
			row := b.Row(i)
			switch i % 6 {
			case 0: // ties everywhere
				for c := range row {
					row[c] = float32(r.IntN(3))
				}
			case 1: // NaNs among the values
				for c := range row {
					if r.IntN(3) == 0 {
						row[c] = nan
					}
				}
			case 2: // all NaN
				for c := range row {
					row[c] = nan
				}
			case 3: // signed zeros
				for c := range row {
					row[c] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
				}
			}
		}
		want := tensor.Argmax(b).Predicted
		got, err := dev.Argmax(b.X, b.Rows, b.Cols)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("argmax %d columns: row %d (%v) = %d, want %d", cols, i, b.Row(i), got[i], want[i])
			}
		}
	}
}

func TestKNN(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	const nref, cols, nq = 3000, 64, 333
	refB := randomBatch(r, nref, cols, -1, 1)
	for i := 0; i < 50; i++ { // duplicate rows: ties at equal distances
		copy(refB.Row(nref-1-i), refB.Row(i))
	}
	refB.Labels = make([]int32, nref)
	cpuRef, err := tensor.NewReference(refB, 1)
	if err != nil {
		t.Fatal(err)
	}
	q := randomBatch(r, nq, cols, -1, 1)
	for i := 0; i < 20; i++ { // queries equal to reference rows: distance 0
		copy(q.Row(i), refB.Row(i*7))
	}
	gpuRef, err := dev.UploadReference(refB.X, nref, cols)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := gpuRef.Free(); err != nil {
			t.Error(err)
		}
	}()
	sqNorm := func(x []float32) float64 {
		var s float64
		for _, v := range x {
			s += float64(v) * float64(v)
		}
		return s
	}
	maxRN := 0.0
	for i := 0; i < nref; i++ {
		maxRN = max(maxRN, sqNorm(refB.Row(i)))
	}
	saved := knnDotsBytes
	defer func() { knnDotsBytes = saved }()
	for _, c := range []struct {
		k         int
		dotsBytes int64
	}{{1, saved}, {5, saved}, {32, saved}, {7, 4 * nref * 10}} { // the last in chunks of 10 queries
		knnDotsBytes = c.dotsBytes
		wantIdx, wantDist, err := tensor.Neighbors(q, cpuRef, c.k)
		if err != nil {
			t.Fatal(err)
		}
		idx, dist, err := dev.KNN(q.X, nq, gpuRef, c.k)
		if err != nil {
			t.Fatal(err)
		}
		swapped := 0
		for i := 0; i < nq; i++ {
			tol := 1e-5 * (sqNorm(q.Row(i)) + maxRN)
			seen := map[int32]bool{}
			for j := i * c.k; j < (i+1)*c.k; j++ {
				if seen[idx[j]] || idx[j] < 0 || int(idx[j]) >= nref {
					t.Fatalf("k=%d query %d: neighbours %v", c.k, i, idx[i*c.k:(i+1)*c.k])
				}
				seen[idx[j]] = true
				if j > i*c.k && (dist[j] < dist[j-1] || dist[j] == dist[j-1] && idx[j] < idx[j-1]) {
					t.Fatalf("k=%d query %d: not in (distance, index) order: %v %v", c.k, i, idx[i*c.k:(i+1)*c.k], dist[i*c.k:(i+1)*c.k])
				}
				if d := math.Abs(float64(dist[j]) - float64(wantDist[j])); d > tol {
					t.Fatalf("k=%d query %d rank %d: distance %v, want %v (tolerance %.3g)", c.k, i, j-i*c.k, dist[j], wantDist[j], tol)
				}
				if idx[j] != wantIdx[j] {
					swapped++ // a near tie in another order: the distances are within tol
				}
			}
		}
		t.Logf("knn k=%d: %d of %d neighbours differ from the CPU's, at distances within the tolerance", c.k, swapped, nq*c.k)
	}
	if _, _, err := dev.KNN(q.X, nq, gpuRef, KNNMaxK+1); err == nil {
		t.Error("k > KNNMaxK accepted")
	}
}

// TestBudget: a call above the budget fails with ErrOutOfMemory, and the device
// stays usable.
func TestBudget(t *testing.T) {
	small, err := Open(0, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	r := rand.New(rand.NewPCG(10, 1))
	x := randomBatch(r, 4096, 784, 0, 1) // 12.8 MB
	_, err = small.Standardize(x.X, x.Rows, x.Cols, tensor.Scaler{Mode: tensor.ScaleUnit})
	var oom *OutOfMemoryError
	if !errors.Is(err, ErrOutOfMemory) || !errors.As(err, &oom) || oom.Budget != 4<<20 {
		t.Fatalf("over the budget: %v, want an OutOfMemoryError", err)
	}
	t.Log(err)
	part := tensor.Batch{Rows: 256, Cols: 784, X: x.X[:256*784]} // the caller splits the batch
	want, _ := tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(part)
	got, err := small.Standardize(part.X, part.Rows, part.Cols, tensor.Scaler{Mode: tensor.ScaleUnit})
	if err != nil {
		t.Fatalf("after an out-of-memory error: %v", err)
	}
	checkFloats(t, "standardize after OOM", got, want.X, 1e-5, nil)
	if used := small.Info().UsedBytes; used > 4<<20 {
		t.Errorf("%d bytes in use, budget %d", used, 4<<20)
	}
}

// TestConcurrent runs calls from several goroutines (more than the lanes).
func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(11, uint64(g)))
			for range 5 {
				tile := randomDNTile(r, 100+r.IntN(300), 100+r.IntN(300), []int{4, 5})
				want, _ := raster.TOA(tile)
				scale, offset := coefficients(tile)
				got, _, err := dev.TOANDVI(tile.DN, scale, offset, 0, 1)
				if err != nil {
					errs <- err
					return
				}
				for b := range got {
					if !slices.EqualFunc(got[b], want.Data[b], func(x, y float32) bool { return x == y || x != x && y != y }) {
						errs <- fmt.Errorf("goroutine %d: band %d differs", g, b)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestInfoAndClose(t *testing.T) {
	info := dev.Info()
	if info.Name == "" || info.TotalBytes <= 0 || info.FreeBytes < 0 || info.SMs <= 0 || info.ComputeMajor < 8 {
		t.Errorf("info %+v", info)
	}
	t.Log(info)
	d, err := Open(0, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.TOA([]uint16{1}, 1, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := Open(1<<20, 0); err == nil {
		t.Error("opened GPU 1048576")
	}
}

// TestFatal checks, in a child process (a sticky error ruins the process's
// context), that an illegal address in a kernel is ErrFatal and that the device
// then refuses every call.
func TestFatal(t *testing.T) {
	if os.Getenv(fatalChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFatal$", "-test.v")
		cmd.Env = append(os.Environ(), fatalChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	// knn_finish reading dot products at address 0x100: an illegal address.
	err := dev.run("fatal test", nil, nil, 0, func(l *lane, _, _ []cu.DevicePtr, _ cu.DevicePtr) error {
		return dev.launch(l, dev.k.knn, 1, blockThreads, cu.DevicePtr(0x100), cu.DevicePtr(0x100), cu.DevicePtr(0x100),
			int64(1), int64(1<<20), int64(1), cu.DevicePtr(0x100), cu.DevicePtr(0x100))
	})
	var fatal *FatalError
	if !errors.Is(err, ErrFatal) || !errors.As(err, &fatal) {
		t.Fatalf("illegal address: %v, want ErrFatal", err)
	}
	t.Log(err)
	if _, err := dev.TOA([]uint16{1}, 1, 0); !errors.Is(err, ErrFatal) {
		t.Fatalf("after a fatal error: %v, want ErrFatal", err)
	}
}

// TestGemmLayout checks the row-major/column-major mapping of gemm directly on a
// tiny product.
func TestGemmLayout(t *testing.T) {
	// X (2x3) W (3x2) = Y (2x2), row-major.
	x := []float32{1, 2, 3, 4, 5, 6}
	w := []float32{1, 0, 0, 1, 1, 1}
	want := []float32{4, 5, 10, 11}
	got, err := dev.Dense(x, 2, w, []float32{0, 0}, 3, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("dense %v, want %v", got, want)
	}
}

// TestClassify checks the error mapping without a failing GPU.
func TestClassify(t *testing.T) {
	if err := classify("x", cu.OutOfMemory); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("OutOfMemory: %v", err)
	}
	if err := classify("x", cu.IllegalAddress); !errors.Is(err, ErrFatal) {
		t.Errorf("IllegalAddress: %v", err)
	}
	if err := classify("x", cu.InvalidValue); errors.Is(err, ErrFatal) || errors.Is(err, ErrOutOfMemory) {
		t.Errorf("InvalidValue: %v", err)
	}
	if err := classify("x", fmt.Errorf("wrapped: %w", driverError(codeOutOfMemory))); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("wrapped driver OOM: %v", err)
	}
	offs, size := pack([]seg{one(make([]byte, 3)), {make([]byte, 2), make([]byte, 2)}, one(nil), one(make([]byte, 1))})
	if !slices.Equal(offs, []int64{0, 256, 512, 512}) || size != 513 {
		t.Errorf("pack: %v %d", offs, size)
	}
}
