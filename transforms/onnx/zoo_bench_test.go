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

// zooPeak is this process's FMA peak at GOMAXPROCS threads, measured once.
var zooPeak = sync.OnceValue(func() peak.FLOPs { return peak.FMA(runtime.GOMAXPROCS(0), 300*time.Millisecond) })

// BenchmarkZoo times the models of a bench_models.py manifest (-zoo=FILE;
// skipped without it), the benchmark `make bench-onnx` runs beside ONNX
// Runtime (containers/onnx/bench_onnx.sh). Per entry, NAME/LABEL, it reports
// the median time of a run (ms/run), the products' rate (GFLOP/s) and its
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
			outs, err := p.Run(ins) // warm-up
			if err != nil {
				b.Fatalf("%s/%s: %v", e.name, e.label, err)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before, mallocs := ms.TotalAlloc, ms.Mallocs
			if _, err := p.Run(ins); err != nil {
				b.Fatalf("%s/%s: %v", e.name, e.label, err)
			}
			runtime.ReadMemStats(&ms)
			allocated, objects := ms.TotalAlloc-before, ms.Mallocs-mallocs
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := p.Run(ins); err != nil {
					b.Fatalf("%s/%s: %v", e.name, e.label, err)
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			med := times[len(times)/2]
			b.ReportMetric(float64(med)/1e6, "ms/run")
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

// maxRelDiff is max |got-want| / max |want| over float32 arrays of one shape.
func maxRelDiff(got, want nd.Array) (float64, error) {
	if !slices.Equal(got.Shape, want.Shape) || got.Type != nd.Float32 || want.Type != nd.Float32 {
		return 0, fmt.Errorf("got %v%v, want %v%v", got.Type, got.Shape, want.Type, want.Shape)
	}
	g, w := nd.MustAs[float32](got), nd.MustAs[float32](want)
	var diff, scale float64
	for i := range w {
		diff = max(diff, math.Abs(float64(g[i])-float64(w[i])))
		scale = max(scale, math.Abs(float64(w[i])))
	}
	if scale == 0 {
		return diff, nil
	}
	return diff / scale, nil
}
