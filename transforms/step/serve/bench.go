package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/shm"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
	"github.com/beamgpu/beamgpu/transforms/step"
)

const benchUsage = `Usage: beamgpu-executor bench [flags]

Measures, in one run, the ceilings of this machine (a host copy, on one core
and as the transport copies: shm.Copy, on up to 8 cores; on a GPU the
pinned and pageable host-device bandwidth, the device's own copy and cuBLAS's
float32 product rate) and then every step with a benchmark input, host to host
through the client and an executor process, as a pipeline's batch goes. Each
result is printed with its floor and the ratio floor/time (1 is the machine's
limit): on a GPU the larger of the batch's bytes over the pinned bus and its
products' FLOPs at cuBLAS's rate; on the CPU reference executor the CPU
function's own time plus one copy (shm.Copy) of the batch's bytes. The echo line
is the transport alone (448 MiB there and back) against two such copies.

With several devices (every visible GPU; the reference executor's
BEAMGPU_REFERENCE_DEVICES virtual ones), each step's throughput is then
measured on each device alone (an executor started with --devices=N) and on
all of them at once, with enough batches in flight to fill them: the "all"
line gives the aggregate over the first device's (N devices scaling
perfectly: Nx).

Flags:
`

// ceilings are the machine's limits, measured in the same run.
type ceilings struct {
	memcpy1 float64 // bytes/s, one core's copy
	memcpy  float64 // bytes/s, shm.Copy's (the transport's copy)
	// On a GPU (device true):
	device                   bool
	h2dPinned, d2hPinned     float64 // bytes/s
	h2dPageable, d2hPageable float64
	deviceCopy               float64 // bytes/s, read + write
	gemm                     float64 // FLOP/s, float32, 8192x784x256
}

func bench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exe := fs.String("executor", "", "the executor binary to benchmark (default: this one)")
	size := fs.String("size", "auto", "full: the sizes of the GPU table (4096x4096 tiles, 8192 and 10000 rows, kNN 10000 vs 60000x784); ci: sizes a 2-core CPU affords; auto: full where the executor has a GPU")
	reps := fs.Int("reps", 5, "timed runs per result (the median is reported)")
	phases := fs.Bool("phases", false, "also print each step's time by phase: client encode, transport, executor decode, host to device, kernel, device to host, executor encode, client decode")
	echoMiB := fs.Int("echo_mib", 448, "size of the transport probe (echo there and back), MiB")
	only := fs.String("steps", "", "comma-separated steps to benchmark (default: every registered step with a benchmark input)")
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *size != "auto" && *size != "full" && *size != "ci" || *reps < 1 || *echoMiB < 0 {
		fs.Usage()
		return 2
	}
	if *exe == "" {
		p, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		*exe = p
	}
	if err := runBench(context.Background(), stdout, *exe, *size, *reps, *phases, *echoMiB, *only); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	return 0
}

func runBench(ctx context.Context, w io.Writer, exe, size string, reps int, phases bool, echoMiB int, only string) error {
	c := ceilings{memcpy1: memcpyRate(reps, func(dst, src []byte) { copy(dst, src) }),
		memcpy: memcpyRate(reps, func(dst, src []byte) { shm.Copy(dst, src) })}
	// The device's own ceilings first, with the device to ourselves; then
	// the executor opens it.
	if err := deviceCeilings(&c, reps); err != nil {
		return err
	}
	ex := step.UseExecutor(exe)
	if ok, why := ex.Available(); !ok {
		return fmt.Errorf("executor %s: %s", exe, why)
	}
	cl, err := client.Shared(exe)
	if err != nil {
		return err
	}
	defer client.CloseShared()
	info, err := cl.Info(ctx)
	if err != nil {
		return err
	}
	full := size == "full" || size == "auto" && !strings.HasPrefix(info.Device, "cpu-reference")
	fmt.Fprintf(w, "beamgpu-executor bench: executor %s (pid %d)\ndevice: %s\nsizes: %s, median of %d runs\n\n",
		exe, info.PID, info.Device, map[bool]string{true: "full", false: "ci"}[full], reps)
	for i, d := range info.Devices {
		if len(info.Devices) > 1 {
			fmt.Fprintf(w, "device %d: %s\n", i, d)
		}
	}

	tw := &table{w: w}
	tw.row("ceiling", "host copy, one core", gbps(c.memcpy1), "", "", "")
	tw.row("ceiling", "host copy, shm.Copy", gbps(c.memcpy), "", "", "")
	if c.device {
		tw.row("ceiling", "host to device, pinned", gbps(c.h2dPinned), "", "", "")
		tw.row("ceiling", "device to host, pinned", gbps(c.d2hPinned), "", "", "")
		tw.row("ceiling", "host to device, pageable", gbps(c.h2dPageable), "", "", "")
		tw.row("ceiling", "device to host, pageable", gbps(c.d2hPageable), "", "", "")
		tw.row("ceiling", "device copy (read + write)", gbps(c.deviceCopy), "", "", "")
		tw.row("ceiling", "sgemm 8192x784x256, no TF32", fmt.Sprintf("%.1f TFLOP/s", c.gemm/1e12), "", "", "")
	}

	if echoMiB > 0 && slices.Contains(info.Ops, testops.Echo) {
		if err := benchEcho(ctx, tw, cl, echoMiB, reps); err != nil {
			return err
		}
	}

	steps := step.All()
	sort.Slice(steps, func(i, j int) bool { return steps[i].Name() < steps[j].Name() })
	for _, s := range steps {
		if only != "" && !slices.Contains(strings.Split(only, ","), s.Name()) {
			continue
		}
		in, work, ok := s.BenchInput(full)
		if !ok || s.Backend().GPUOp == "" {
			continue
		}
		inB, outB, sideB, err := s.Sizes(in)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name(), err)
		}
		cpuReps := reps
		if _, err := s.Apply(backend.CPU, in); err != nil { // also a warm-up
			return fmt.Errorf("%s on the CPU: %w", s.Name(), err)
		}
		cpu, err := median(cpuReps, func() error { _, err := s.Apply(backend.CPU, in); return err })
		if err != nil {
			return fmt.Errorf("%s on the CPU: %w", s.Name(), err)
		}
		if _, err := s.OffloadAny(ctx, in); err != nil { // warm-up: side data, buffers, JIT
			return fmt.Errorf("%s through the executor: %w", s.Name(), err)
		}
		took, err := median(reps, func() error { _, err := s.OffloadAny(ctx, in); return err })
		if err != nil {
			return fmt.Errorf("%s through the executor: %w", s.Name(), err)
		}
		var floor time.Duration
		var what string
		if c.device {
			transfer := seconds(float64(inB)/c.h2dPinned + float64(outB)/c.d2hPinned)
			compute := seconds(work.FLOPs / c.gemm)
			floor, what = transfer, "bus"
			if compute > transfer {
				floor, what = compute, "sgemm"
			}
		} else {
			floor, what = cpu+seconds(float64(inB+outB)/c.memcpy), "cpu + copy"
		}
		name := s.Name() + " " + work.Name
		if sideB > 0 {
			name += fmt.Sprintf(" (+%.1f MB side data, once)", float64(sideB)/1e6)
		}
		tw.row(s.Name(), name, ms(took), fmt.Sprintf("%s %s", what, ms(floor)), ratio(floor, took),
			fmt.Sprintf("cpu in process %s (%.1fx)", ms(cpu), cpu.Seconds()/took.Seconds()))
		if phases {
			p, err := s.ProfileAny(ctx, in)
			if err != nil {
				return fmt.Errorf("%s: profile: %w", s.Name(), err)
			}
			tw.row("", "  phases: "+p.String(), "", "", "", "")
		}
	}
	if len(info.Devices) > 1 {
		if err := benchDevices(ctx, tw, exe, info, full, reps, only); err != nil {
			return err
		}
	}
	tw.flush()
	return nil
}

// benchDevices measures each step's throughput on each device alone and on
// all of them at once: batches from enough goroutines to keep every lane of
// the devices used busy. Each measurement starts its own executor (the
// shared one, restarted with --devices through its environment).
func benchDevices(ctx context.Context, tw *table, exe string, info client.Info, full bool, reps int, only string) error {
	defer os.Unsetenv(executor.EnvDevices)
	lanes := max(1, int(info.Limits.MaxConcurrent))
	n := len(info.Devices)
	steps := step.All()
	sort.Slice(steps, func(i, j int) bool { return steps[i].Name() < steps[j].Name() })
	for _, s := range steps {
		if only != "" && !slices.Contains(strings.Split(only, ","), s.Name()) {
			continue
		}
		in, work, ok := s.BenchInput(full)
		if !ok || s.Backend().GPUOp == "" {
			continue
		}
		rate := func(devices string, used int) (float64, error) {
			os.Setenv(executor.EnvDevices, devices)
			if err := client.CloseShared(); err != nil {
				return 0, err
			}
			if _, err := client.Shared(exe); err != nil {
				return 0, err
			}
			workers := 2 * lanes * used
			batches := max(reps, 2) * workers
			if _, err := s.OffloadAny(ctx, in); err != nil { // warm-up: the executor, side data
				return 0, err
			}
			start := time.Now()
			var next atomic.Int64
			errs := make(chan error, workers)
			for range workers {
				go func() {
					for next.Add(1) <= int64(batches) {
						if _, err := s.OffloadAny(ctx, in); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			var first error
			for range workers {
				if err := <-errs; err != nil && first == nil {
					first = err
				}
			}
			return float64(batches) / time.Since(start).Seconds(), first
		}
		var one float64
		for d := range n {
			r, err := rate(strconv.Itoa(d), 1)
			if err != nil {
				return fmt.Errorf("%s on device %d: %w", s.Name(), d, err)
			}
			if d == 0 {
				one = r
			}
			tw.row("devices", fmt.Sprintf("%s %s: device %d alone", s.Name(), work.Name, d), fmt.Sprintf("%.1f batches/s", r), "", "", "")
		}
		all, err := rate("", n)
		if err != nil {
			return fmt.Errorf("%s on all %d devices: %w", s.Name(), n, err)
		}
		tw.row("devices", fmt.Sprintf("%s %s: all %d devices at once", s.Name(), work.Name, n), fmt.Sprintf("%.1f batches/s", all),
			fmt.Sprintf("aggregate %.2fx device 0's", all/one), fmt.Sprintf("(%d perfect)", n), "")
	}
	return client.CloseShared()
}

// benchEcho times the transport alone: n MiB to the executor and back by
// echo, the result read in place (two copies: into shared memory, and the
// executor's echo), against two copies (shm.Copy, as the transport copies) of
// the same bytes; and the same with
// the result copied into Go memory, as a step's output is (a fresh
// allocation: its page faults are part of what that costs).
func benchEcho(ctx context.Context, tw *table, cl *client.Client, mib, reps int) error {
	n := mib << 20
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	copy(dst, src)
	in := [][]byte{src}
	view := func() error {
		r, err := cl.CallView(ctx, testops.Echo, nil, in)
		if err != nil {
			return err
		}
		defer r.Release()
		if len(r.Outputs) != 1 || len(r.Outputs[0]) != n || r.Outputs[0][n-1] != src[n-1] {
			return errors.New("echo returned the wrong bytes")
		}
		return nil
	}
	if err := view(); err != nil { // the arena, created and mapped once
		return fmt.Errorf("echo: %w", err)
	}
	took, err := median(reps, view)
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	floor, _ := median(reps, func() error { shm.Copy(dst, src); shm.Copy(src, dst); return nil })
	tw.row("transport", fmt.Sprintf("echo %d MiB there and back, read in place", mib), ms(took),
		"2 copies "+ms(floor), ratio(floor, took), "")
	took, err = median(reps, func() error { _, err := cl.Call(ctx, testops.Echo, nil, in); return err })
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	tw.row("transport", fmt.Sprintf("echo %d MiB there and back, into Go memory", mib), ms(took),
		"3 copies "+ms(floor*3/2), ratio(floor*3/2, took), "")
	return nil
}

// median runs fn reps times and returns its median time.
func median(reps int, fn func() error) (time.Duration, error) {
	ts := make([]time.Duration, reps)
	for i := range ts {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		ts[i] = time.Since(start)
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}

// memcpyRate is cp's host copy rate on 256 MiB (warm pages).
func memcpyRate(reps int, cp func(dst, src []byte)) float64 {
	const n = 256 << 20
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src { // never written, src would read the kernel's zero page, from the cache
		src[i] = byte(i * 7)
	}
	copy(dst, src)
	t, _ := median(reps, func() error { cp(dst, src); return nil })
	return n / t.Seconds()
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func gbps(bytesPerSecond float64) string { return fmt.Sprintf("%.1f GB/s", bytesPerSecond/1e9) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", d.Seconds()*1e3) }

func ratio(floor, took time.Duration) string {
	return fmt.Sprintf("ratio %.2f", floor.Seconds()/took.Seconds())
}

// table prints aligned rows.
type table struct {
	w    io.Writer
	rows [][]string
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) flush() {
	width := make([]int, 6)
	for _, r := range t.rows {
		if strings.HasPrefix(r[1], "  phases") {
			continue
		}
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			if strings.HasPrefix(r[1], "  phases") {
				b.WriteString(c)
				continue
			}
			fmt.Fprintf(&b, "%-*s  ", width[i], c)
		}
		fmt.Fprintln(t.w, strings.TrimRight(b.String(), " "))
	}
}
