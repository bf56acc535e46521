package onnx_test

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/internal/peak"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/nd/npy"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
)

var zooManifest = flag.String("zoo", "", "BenchmarkZoo: the manifest of containers/onnx/bench_models.py (make bench-onnx)")

// zooWarmup is BenchmarkZoo's runs before it times any (the first, the
// one whose allocations it counts, and zooWarmup-2 between), as many as
// ONNX Runtime's side makes (ort_run.js --warmup): besides the caches, the Go
// heap grows over the first runs of a model with large outputs, each new
// output on pages the process faults in, where a pipeline's thousands of
// calls reuse the collected ones.
var zooWarmup = flag.Int("zoo-warmup", 2, "BenchmarkZoo: runs before the measured ones")

// zooWarmupMs adds warm-up runs while the warm-up has taken less (at most
// maxWarmup runs in all), as ort_run.js --warmup-ms does: the cheap
// operators run dozens of times, a large model the zooWarmup.
var zooWarmupMs = flag.Int("zoo-warmup-ms", 0, "BenchmarkZoo: more warm-up runs while the warm-up took less than this many ms")

// maxWarmup bounds the warm-up runs zooWarmupMs adds.
const maxWarmup = 100

// zooPeak is this process's FMA peak at GOMAXPROCS threads, measured once.
var zooPeak = sync.OnceValue(func() peak.FLOPs { return peak.FMA(runtime.GOMAXPROCS(0), 300*time.Millisecond) })

// BenchmarkZoo times the models of a bench_models.py manifest (-zoo=FILE;
// skipped without it), the benchmark `make bench-onnx` runs beside ONNX
// Runtime (containers/onnx/bench_onnx.sh). Per entry, NAME/LABEL, it reports
// the median time of a run (ms/run) and the fastest (min_ms/run: on a
// machine whose other load only adds time, the run least disturbed), the
// median of the process's CPU time
// over a run (cpu_ms/run, user and system: the measure that a loaded
// machine disturbs least at one thread), the products' rate (GFLOP/s) and its
// share of the FMA peak measured in the same process at GOMAXPROCS threads
// (peak_share), the bytes and the objects allocated by a run after the
// first (B/run, allocs/run: Run's new outputs among them), and,
// where ONNX Runtime's output was written beside the manifest
// (NAME-LABEL.ort.npy), the largest difference from it relative to its
// largest magnitude (max_rel_diff).
func BenchmarkZoo(b *testing.B) {
	if *zooManifest == "" {
		b.Skip("no -zoo manifest (make bench-onnx writes one)")
	}
	entries, err := readZoo(*zooManifest)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		b.Run(e.name+"/"+e.label, func(b *testing.B) {
			m, err := onnxtest.LoadFile(e.model)
			if err != nil {
				b.Fatalf("%s: %v", e.model, err)
			}
			ins := make([]nd.Array, len(e.inputs))
			for i, f := range e.inputs {
				if ins[i], err = readZooInput(b, f); err != nil {
					b.Fatal(err)
				}
			}
			p, err := m.Plan(ins)
			if err != nil {
				b.Fatalf("%s/%s: %v", e.name, e.label, err)
			}
			warm := time.Now()
			outs, err := p.Run(ins) // warm-up
			if err != nil {
				b.Fatalf("%s/%s: %v", e.name, e.label, err)
			}
			// run is one run as a pipeline makes it. A plan keyed on an
			// input's contents (NonZero's, NonMaxSuppression's: their
			// outputs' shapes come from the values) computes those nodes
			// as it is made and is cached by the contents, so each run
			// gets inputs of contents not seen before, as a pipeline's
			// rows are, and makes its plan.
			run := func() error { _, err := p.Run(ins); return err }
			if fresh := freshInputs(ins); fresh != nil {
				if q, err := m.Plan(fresh()); err == nil && q != p {
					b.Logf("%s/%s: the plan is keyed on input contents: each run makes its plan", e.name, e.label)
					run = func() error {
						in := fresh()
						q, err := m.Plan(in)
						if err != nil {
							return err
						}
						_, err = q.Run(in)
						return err
					}
				}
			}
			// the warm-up: the runs above and the counted one below are two
			for w := 2; w < *zooWarmup || w < maxWarmup && time.Since(warm) < time.Duration(*zooWarmupMs)*time.Millisecond; w++ {
				if err := run(); err != nil {
					b.Fatalf("%s/%s: %v", e.name, e.label, err)
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before, mallocs := ms.TotalAlloc, ms.Mallocs
			if err := run(); err != nil {
				b.Fatalf("%s/%s: %v", e.name, e.label, err)
			}
			runtime.ReadMemStats(&ms)
			allocated, objects := ms.TotalAlloc-before, ms.Mallocs-mallocs
			var times, cpu []time.Duration
			for b.Loop() {
				start, startCPU := time.Now(), cpuTime()
				if err := run(); err != nil {
					b.Fatalf("%s/%s: %v", e.name, e.label, err)
				}
				times = append(times, time.Since(start))
				cpu = append(cpu, cpuTime()-startCPU)
			}
			slices.Sort(times)
			slices.Sort(cpu)
			med := times[len(times)/2]
			b.ReportMetric(float64(med)/1e6, "ms/run")
			b.ReportMetric(float64(times[0])/1e6, "min_ms/run")
			if cpu[len(cpu)-1] > 0 {
				b.ReportMetric(float64(cpu[len(cpu)/2])/1e6, "cpu_ms/run")
			}
			flops := p.ProductFLOPs()
			b.ReportMetric(flops/med.Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(flops/med.Seconds()/zooPeak().PerSecond, "peak_share")
			b.ReportMetric(float64(allocated), "B/run")
			b.ReportMetric(float64(objects), "allocs/run")
			ref := filepath.Join(filepath.Dir(*zooManifest), e.name+"-"+e.label+".ort.npy")
			if want, err := npy.ReadFile(ref); err == nil {
				d, err := maxRelDiff(outs[0], want)
				if err != nil {
					b.Fatalf("%s/%s: against ONNX Runtime's %s: %v", e.name, e.label, ref, err)
				}
				b.ReportMetric(d, "max_rel_diff")
			}
		})
	}
}

// TestZooRunIntoAllocs prints, for each entry of the -zoo manifest (skipped
// without it), the allocations of a run into the caller's outputs
// (Plan.RunInto) after the first, at 1 and 2 threads: what the table's
// allocations come to without Run's new outputs.
func TestZooRunIntoAllocs(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes sync.Pool drop what it holds: allocations are counted without it")
	}
	if *zooManifest == "" {
		t.Skip("no -zoo manifest")
	}
	entries, err := readZoo(*zooManifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m, err := onnxtest.LoadFile(e.model)
		if err != nil {
			t.Fatalf("%s: %v", e.model, err)
		}
		ins := make([]nd.Array, len(e.inputs))
		for i, f := range e.inputs {
			if ins[i], err = readZooInput(t, f); err != nil {
				t.Fatal(err)
			}
		}
		for _, procs := range []int{1, 2} {
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				p, err := m.Plan(ins)
				if err != nil {
					t.Fatalf("%s/%s: %v", e.name, e.label, err)
				}
				outs := make([]nd.Array, len(m.Outputs))
				metas, err := p.OutputMeta()
				if err != nil {
					t.Fatalf("%s/%s: %v", e.name, e.label, err)
				}
				for i, meta := range metas {
					outs[i] = nd.Zeros(m.Outputs[i].Type, meta.Shape...)
				}
				run := func() {
					if err := p.RunInto(ins, outs); err != nil {
						t.Fatalf("%s/%s: %v", e.name, e.label, err)
					}
				}
				run() // the plan's state; then the pools of the kernels' buffers filled
				run()
				t.Logf("%s/%s at %d threads: %v allocations a run", e.name, e.label, procs, testing.AllocsPerRun(3, run))
			}()
		}
	}
}

// TestZooPeak prints the peak BenchmarkZoo's peak_share divides by (with
// -zoo only), so that the table can say it.
func TestZooPeak(t *testing.T) {
	if *zooManifest == "" {
		t.Skip("no -zoo manifest")
	}
	p := zooPeak()
	t.Logf("peak: %.1f GFLOP/s (%s FMA loop, %d threads)", p.PerSecond/1e9, p.ISA, p.Threads)
}

type zooEntry struct {
	name, label, model string
	inputs             []string
}

func readZoo(path string) ([]zooEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []zooEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 4 {
			return nil, fmt.Errorf("%s:%d: %d fields, want NAME, LABEL, MODEL, INPUTS", path, n, len(fields))
		}
		out = append(out, zooEntry{fields[0], fields[1], fields[2], strings.Split(fields[3], ",")})
	}
	return out, sc.Err()
}

// readZooInput reads FILE (.npy, or an ONNX TensorProto .pb) or FILE@ROWS
// (its rows repeated in order to ROWS).
func readZooInput(b testing.TB, spec string) (nd.Array, error) {
	file, rows, repeat := strings.Cut(spec, "@")
	var a nd.Array
	if strings.HasSuffix(file, ".pb") {
		a = onnxtest.ReadTensor(b, file)
	} else {
		var err error
		if a, err = npy.ReadFile(file); err != nil {
			return a, err
		}
	}
	if !repeat {
		return a, nil
	}
	n, err := strconv.Atoi(rows)
	if err != nil || n < 1 {
		return a, fmt.Errorf("%s: rows %q: not a positive integer", spec, rows)
	}
	return repeatRows(a, n), nil
}

// freshInputs returns a function that returns ins with the first element
// of the first input changed to a value no earlier call gave (float32,
// int64 or int32; nil for other types), a copy made once and changed in
// place.
func freshInputs(ins []nd.Array) func() []nd.Array {
	if len(ins) == 0 {
		return nil
	}
	in := slices.Clone(ins)
	in[0] = ins[0].Clone()
	n := 0
	switch in[0].Type {
	case nd.Float32:
		v := nd.MustAs[float32](in[0])
		if len(v) == 0 {
			return nil
		}
		base := v[0]
		return func() []nd.Array { n++; v[0] = base + float32(n)*1e-3; return in }
	case nd.Int64:
		v := nd.MustAs[int64](in[0])
		if len(v) == 0 {
			return nil
		}
		base := v[0]
		return func() []nd.Array { n++; v[0] = base + int64(n); return in }
	case nd.Int32:
		v := nd.MustAs[int32](in[0])
		if len(v) == 0 {
			return nil
		}
		base := v[0]
		return func() []nd.Array { n++; v[0] = base + int32(n); return in }
	}
	return nil
}

// maxRelDiff is max |got-want| / max |want| over arrays of one shape and
// type: float32, or int64, int32, uint8 and int8 (indices and quantized
// values, which must be equal: any difference is reported as it is).
func maxRelDiff(got, want nd.Array) (float64, error) {
	if !slices.Equal(got.Shape, want.Shape) || got.Type != want.Type {
		return 0, fmt.Errorf("got %v%v, want %v%v", got.Type, got.Shape, want.Type, want.Shape)
	}
	var g, w []float64
	switch got.Type {
	case nd.Float32:
		g, w = float64s(nd.MustAs[float32](got)), float64s(nd.MustAs[float32](want))
	case nd.Int64:
		g, w = float64s(nd.MustAs[int64](got)), float64s(nd.MustAs[int64](want))
	case nd.Int32:
		g, w = float64s(nd.MustAs[int32](got)), float64s(nd.MustAs[int32](want))
	case nd.Uint8:
		g, w = float64s(nd.MustAs[uint8](got)), float64s(nd.MustAs[uint8](want))
	case nd.Int8:
		g, w = float64s(nd.MustAs[int8](got)), float64s(nd.MustAs[int8](want))
	default:
		return 0, fmt.Errorf("outputs of type %v are not compared", got.Type)
	}
	var diff, scale float64
	for i := range w {
		diff = max(diff, math.Abs(g[i]-w[i]))
		scale = max(scale, math.Abs(w[i]))
	}
	if got.Type != nd.Float32 {
		return diff, nil
	}
	if scale == 0 {
		return diff, nil
	}
	return diff / scale, nil
}

func float64s[T float32 | int64 | int32 | uint8 | int8](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
