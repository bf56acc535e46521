package integration

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/transforms/raster/rastertest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/require"
)

// The fault soak: the pipelines run again and again (landsat and fashion on
// the reference executor under --backend=auto, infer on the CPU: its faults
// are in soak_infer_test.go), while faults from a seeded schedule are
// injected at random moments, and after every run the invariants are
// checked. make soak runs it with -soak.faults=200 (minutes); make test runs
// the short version (the default, a few faults of each kind).
var (
	soakFaults = flag.Int("soak.faults", 10, "fault soak: inject at least this many faults")
	soakSeed   = flag.Uint64("soak.seed", 20, "fault soak: the schedule's seed")
)

// The faults, each injected into one run.
const (
	faultExecKill  = "executor SIGKILL"
	faultExecStop  = "executor SIGSTOP"
	faultTerm      = "pipeline SIGTERM"
	faultDiskFull  = "full output disk"
	faultSmallShm  = "64 MiB /dev/shm"
	faultFIFO      = "FIFO input"
	faultTruncated = "truncated input"
)

var processFaults = []string{faultExecKill, faultExecStop, faultTerm, faultInt, faultDiskFull, faultSmallShm}

// soakBound is the longest a run may take.
const soakBound = 90 * time.Second

// soakInputs are a pipeline's inputs and its clean run's outputs.
type soakInputs struct {
	pipeline string
	base     []string          // landsat: scene directories; fashion: images files (labels beside)
	spare    string            // landsat: a scene directory to break; fashion: an images file
	clean    map[string][]byte // output files of the clean run, by path relative to --output
	cleanDur time.Duration
	rows     int // fashion: the rows of base
}

func TestFaultSoak(t *testing.T) {
	root := t.TempDir()
	r := rand.New(rand.NewPCG(*soakSeed, 1))
	inputs := []*soakInputs{landsatSoakInputs(t, root), fashionSoakInputs(t, root), inferSoakInputs(t, root)}
	for _, in := range inputs {
		in.clean, in.cleanDur = cleanRun(t, in, root)
		t.Logf("%s: clean run in %s, %d output files", in.pipeline, in.cleanDur.Round(time.Millisecond), len(in.clean))
	}
	canMount := os.Geteuid() == 0 && mountWorks(t, root)
	_, unshareErr := exec.LookPath("unshare")
	canUnshare := canMount && unshareErr == nil

	injected, skipped := map[string]int{}, map[string]int{}
	var violations []string
	total, runs := 0, 0
	var longest time.Duration
	for total < *soakFaults {
		runs++
		in := inputs[r.IntN(len(inputs))]
		if in.pipeline == "infer" {
			f := inferFaults[r.IntN(len(inferFaults))]
			res := soakInferRun(t, r, in, root, runs, f)
			t.Logf("run %d (infer; %s): %s, %d violations", runs, f, res.wall.Round(time.Millisecond), len(res.violations))
			longest = max(longest, res.wall)
			for _, f := range res.applied {
				injected[f]++
				total++
			}
			for _, v := range res.violations {
				violations = append(violations, fmt.Sprintf("run %d (infer; %s): %s", runs, f, v))
			}
			continue
		}
		pf := processFaults[r.IntN(len(processFaults))]
		inf := []string{faultFIFO, faultTruncated}[r.IntN(2)]
		if pf == faultDiskFull && !canMount || pf == faultSmallShm && !canUnshare {
			skipped[pf]++
			pf = ""
		}
		res := soakRun(t, r, in, root, runs, pf, inf)
		t.Logf("run %d (%s; %s, %s): %s, %d violations", runs, in.pipeline, pf, inf, res.wall.Round(time.Millisecond), len(res.violations))
		longest = max(longest, res.wall)
		for _, f := range res.applied {
			injected[f]++
			total++
		}
		for _, v := range res.violations {
			violations = append(violations, fmt.Sprintf("run %d (%s; %s, %s): %s", runs, in.pipeline, pf, inf, v))
		}
	}
	var kinds []string
	for k := range injected {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	fmt.Fprintf(&b, "fault soak (seed %d): %d runs, %d faults injected, longest run %s\n", *soakSeed, runs, total, longest.Round(time.Millisecond))
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-27s %d\n", k, injected[k])
	}
	for k, n := range skipped {
		fmt.Fprintf(&b, "  %-27s skipped %d times (needs root and a tmpfs mount; unshare(1) for /dev/shm)\n", k, n)
	}
	fmt.Fprintf(&b, "violations: %d\n", len(violations))
	t.Log("\n" + b.String())
	fmt.Print(b.String())
	require.Empty(t, violations)
}

// mountWorks reports whether a tmpfs can be mounted here.
func mountWorks(t *testing.T, root string) bool {
	dir := filepath.Join(root, "mount-probe")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		return false
	}
	syscall.Unmount(dir, 0)
	return true
}

func landsatSoakInputs(t *testing.T, root string) *soakInputs {
	in := &soakInputs{pipeline: "landsat"}
	lt := rastertest.TIFF{Tiled: true, BlockW: 128, BlockH: 128, Compression: rastertest.Deflate}
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("LC08_L1TP_00000%d_20200101_20200101_01_T1", i)
		dir := filepath.Join(root, "landsat-scenes", id)
		require.NoError(t, rastertest.WriteScene(dir, rastertest.Scene{ProductID: id, Width: 700, Height: 600, TIFF: lt}))
		if i < 4 {
			in.base = append(in.base, dir)
		} else {
			in.spare = dir
		}
	}
	return in
}

func fashionSoakInputs(t *testing.T, root string) *soakInputs {
	in := &soakInputs{pipeline: "fashion"}
	images, err := tensor.ReadIDX(tensor.SampleImagesPath())
	require.NoError(t, err)
	labels, err := tensor.ReadIDX(tensor.SampleLabelsPath())
	require.NoError(t, err)
	dir := filepath.Join(root, "fashion-files")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const n = 2500
	for i := range 4 {
		x, l := images, labels
		x.Dims = slices.Clone(x.Dims)
		l.Dims = slices.Clone(l.Dims)
		x.Dims[0], l.Dims[0] = n, n
		x.Data, l.Data = images.Data[i*n*784:(i+1)*n*784], labels.Data[i*n:(i+1)*n]
		name := filepath.Join(dir, fmt.Sprintf("part%d-images-idx3-ubyte", i))
		writeIDXFile(t, name, x)
		writeIDXFile(t, strings.Replace(name, "images-idx3", "labels-idx1", 1), l)
		if i < 3 {
			in.base = append(in.base, name)
			in.rows += n
		} else {
			in.spare = name
		}
	}
	return in
}

func writeIDXFile(t *testing.T, path string, x tensor.IDX) {
	var buf bytes.Buffer
	require.NoError(t, tensor.EncodeIDX(&buf, x))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// runInput makes the input of one run in dir: the base inputs, and the
// spare one broken by fault (a FIFO in place of a file, or a file cut in
// half). It returns the --input value.
func runInput(t *testing.T, in *soakInputs, dir, fault string) string {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	link := func(src, dst string) { require.NoError(t, os.Link(src, dst)) }
	breakFile := func(src, dst string) {
		if fault == faultFIFO {
			require.NoError(t, syscall.Mkfifo(dst, 0o644))
			return
		}
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, data[:len(data)/2], 0o644))
	}
	switch in.pipeline {
	case "landsat":
		for _, s := range append(slices.Clone(in.base), in.spare) {
			d := filepath.Join(dir, filepath.Base(s))
			require.NoError(t, os.MkdirAll(d, 0o755))
			entries, err := os.ReadDir(s)
			require.NoError(t, err)
			for _, e := range entries {
				if s == in.spare && strings.HasSuffix(e.Name(), "_B4.TIF") {
					breakFile(filepath.Join(s, e.Name()), filepath.Join(d, e.Name()))
				} else {
					link(filepath.Join(s, e.Name()), filepath.Join(d, e.Name()))
				}
			}
		}
	case "fashion":
		for _, f := range append(slices.Clone(in.base), in.spare) {
			lbl := strings.Replace(f, "images-idx3", "labels-idx1", 1)
			link(lbl, filepath.Join(dir, filepath.Base(lbl)))
			if f == in.spare {
				breakFile(f, filepath.Join(dir, filepath.Base(f)))
			} else {
				link(f, filepath.Join(dir, filepath.Base(f)))
			}
		}
	}
	return dir
}

func pipelineArgs(in *soakInputs, input, output string) []string {
	args := []string{"--progress=0", "--backend=auto", "--gpu_executor=" + executorPath, "--input=" + input, "--output=" + output}
	if in.pipeline == "landsat" {
		args = append(args, "--tile_size=128")
	} else {
		args = append(args, "--batch_rows=250", "--max_batch_rows=500")
	}
	return args
}

// cleanRun runs the pipeline on its base inputs alone and returns its
// outputs.
func cleanRun(t *testing.T, in *soakInputs, root string) (map[string][]byte, time.Duration) {
	dir := filepath.Join(root, "clean-"+in.pipeline)
	input := filepath.Join(dir, "in")
	require.NoError(t, os.MkdirAll(input, 0o755))
	for _, b := range in.base {
		if in.pipeline == "landsat" {
			d := filepath.Join(input, filepath.Base(b))
			require.NoError(t, os.MkdirAll(d, 0o755))
			entries, err := os.ReadDir(b)
			require.NoError(t, err)
			for _, e := range entries {
				require.NoError(t, os.Link(filepath.Join(b, e.Name()), filepath.Join(d, e.Name())))
			}
		} else if in.pipeline == "fashion" {
			require.NoError(t, os.Link(b, filepath.Join(input, filepath.Base(b))))
			lbl := strings.Replace(b, "images-idx3", "labels-idx1", 1)
			require.NoError(t, os.Link(lbl, filepath.Join(input, filepath.Base(lbl))))
		}
	}
	out := filepath.Join(dir, "out")
	args := pipelineArgs(in, input, out)
	if in.pipeline == "infer" {
		args = inferArgs(in.base[0], in.base[1], out)
	}
	cmd := exec.Command(pipelineBin(t, in.pipeline), args...)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "the clean run of %s:\n%s", in.pipeline, b)
	return outputFiles(t, out), time.Since(start)
}

// outputFiles reads the files under out, by relative path, leaving out the
// reports (they name the run).
func outputFiles(t *testing.T, out string) map[string][]byte {
	files := map[string][]byte{}
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(out, path)
		switch rel {
		case "summary.json", "failed.jsonl", "metrics.json":
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			files[rel] = b
		}
		return nil
	})
	return files
}

type soakResult struct {
	applied    []string
	violations []string
	wall       time.Duration
}

// soakRun makes one run with the process fault pf (none if empty) and the
// input fault inf, and checks the invariants after it.
func soakRun(t *testing.T, r *rand.Rand, in *soakInputs, root string, n int, pf, inf string) soakResult {
	var res soakResult
	bad := func(format string, args ...any) {
		res.violations = append(res.violations, fmt.Sprintf(format, args...))
	}
	dir := filepath.Join(root, fmt.Sprintf("run%04d", n))
	input := runInput(t, in, filepath.Join(dir, "in"), inf)
	res.applied = append(res.applied, inf)
	out := filepath.Join(dir, "out")
	tmp := filepath.Join(dir, "tmp") // the run's TMPDIR: its executors' socket directories
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	if pf == faultDiskFull {
		// Large enough for the reports' first bytes, too small for the outputs.
		require.NoError(t, syscall.Mount("tmpfs", out, "tmpfs", 0, "size=256k"))
		defer syscall.Unmount(out, syscall.MNT_DETACH)
	}
	bin, args := pipelineBin(t, in.pipeline), pipelineArgs(in, input, out)
	if pf == faultSmallShm {
		args = append([]string{"--mount", "--propagation", "private", "sh", "-c",
			`mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$0" "$@"`, bin}, args...)
		bin = "unshare"
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_RUNTIME_DIR=", client.EnvStallAfter+"=500ms")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()

	applied := pf == faultDiskFull || pf == faultSmallShm
	if pf == faultExecKill || pf == faultExecStop || pf == faultTerm || pf == faultInt {
		at := time.Duration(r.Float64() * 1.2 * float64(in.cleanDur))
		select {
		case <-done:
		case <-time.After(at):
			switch pf {
			case faultTerm:
				applied = cmd.Process.Signal(syscall.SIGTERM) == nil
			case faultInt:
				applied = cmd.Process.Signal(syscall.SIGINT) == nil
			default:
				sig := syscall.SIGKILL
				if pf == faultExecStop {
					sig = syscall.SIGSTOP
				}
				// The executor may not be started yet: the first one that is.
				for end := time.Now().Add(in.cleanDur); !applied && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					select {
					case <-done:
						end = time.Time{}
						continue
					default:
					}
					for _, pid := range executorsOf(tmp) {
						applied = applied || syscall.Kill(pid, sig) == nil
					}
				}
			}
		}
	}
	if applied {
		res.applied = append(res.applied, pf)
	}
	select {
	case <-done:
	case <-time.After(soakBound):
		cmd.Process.Kill()
		<-done
		bad("ran past its bound of %v", soakBound)
	}
	res.wall = time.Since(start)
	code := cmd.ProcessState.ExitCode()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	// SIGTERM or SIGINT before the program set its handler ends it at once,
	// with nothing written yet.
	sig := map[string]syscall.Signal{faultTerm: syscall.SIGTERM, faultInt: syscall.SIGINT}[pf]
	interrupted := sig != 0 && applied && (code == 128+int(sig) || ws.Signaled() && ws.Signal() == sig)
	switch {
	case interrupted:
	case code == 0 || code == 1:
	default:
		bad("exit status %d:\n%s", code, tail(log.String(), 15))
	}

	// Nothing left behind: no executor (its parent watch takes up to half a
	// second), no socket directory, no temporary file or lock.
	var left []int
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if left = executorsOf(tmp); len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		bad("executor processes left: %v (exit status %d after %s):\n%s", left, code, res.wall.Round(time.Millisecond), tail(log.String(), 12))
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), protocol.SocketDirPrefix) {
				bad("socket directory left: %s", e.Name())
			}
		}
	}
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err == nil && (runTemp.MatchString(d.Name()) || strings.HasPrefix(d.Name(), ".beamgpu-run.")) {
			bad("temporary file left: %s (exit status %d):\n%s", path, code, tail(log.String(), 8))
		}
		return nil
	})

	if interrupted || pf == faultDiskFull && code != 0 {
		// What was published must be whole and right (landsat's scenes).
		if in.pipeline == "landsat" {
			checkScenes(in, out, publishedScenes(out), bad)
		}
		return res
	}
	if code != 0 {
		bad("exit status %d without an interruption or a full disk:\n%s", code, tail(log.String(), 15))
		return res
	}
	switch in.pipeline {
	case "landsat":
		var sum struct {
			ScenesIn int      `json:"scenes_in"`
			Done     []string `json:"done"`
			Failed   []string `json:"failed"`
		}
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil || json.Unmarshal(b, &sum) != nil {
			bad("no readable summary.json: %v", err)
			return res
		}
		if sum.ScenesIn != 4 || len(sum.Done)+len(sum.Failed) != 4 {
			bad("scenes not accounted for exactly once: %d in, done %v, failed %v", sum.ScenesIn, sum.Done, sum.Failed)
		}
		var want []string
		for _, s := range in.base {
			want = append(want, filepath.Base(s))
		}
		if pf != faultDiskFull && !slices.Equal(sum.Done, want) {
			bad("done %v, want %v (the broken scene fails, the others are done: auto falls back)", sum.Done, want)
		}
		for _, d := range sum.Done {
			if slices.Contains(sum.Failed, d) {
				bad("scene %s both done and failed", d)
			}
		}
		checkScenes(in, out, sum.Done, bad)
	case "fashion":
		m := regexp.MustCompile(`records: (\d+) in, (\d+) predicted, (\d+) failed`).FindStringSubmatch(log.String())
		if m == nil {
			bad("no records line:\n%s", tail(log.String(), 10))
			return res
		}
		recIn, pred, failed := atoi(m[1]), atoi(m[2]), atoi(m[3])
		if recIn != pred+failed || pred != in.rows {
			bad("records: %d in, %d predicted, %d failed; want %d predicted (the broken file fails whole)", recIn, pred, failed, in.rows)
		}
		got := outputFiles(t, out)
		for _, name := range []string{"predictions.csv", "confusion.png"} {
			if !bytes.Equal(got[name], in.clean[name]) {
				bad("%s differs from the clean run's", name)
			}
		}
		fl, _ := os.ReadFile(filepath.Join(out, "failed.jsonl"))
		if !bytes.Contains(fl, []byte(filepath.Base(in.spare))) {
			bad("the broken file is not in failed.jsonl: %s", fl)
		}
	}
	return res
}

// checkScenes checks that each scene's files are those of the clean run, byte for byte.
func checkScenes(in *soakInputs, out string, scenes []string, bad func(string, ...any)) {
	for _, s := range scenes {
		n := 0
		for rel, want := range in.clean {
			if !strings.HasPrefix(rel, s+"/") {
				continue
			}
			n++
			got, err := os.ReadFile(filepath.Join(out, rel))
			if err != nil || !bytes.Equal(got, want) {
				bad("%s: not the clean run's (%v)", rel, err)
			}
		}
		if n == 0 {
			bad("scene %s done but not in the clean run", s)
		}
	}
}

// publishedScenes are the scene directories under out.
func publishedScenes(out string) []string {
	var scenes []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			scenes = append(scenes, e.Name())
		}
	}
	return scenes
}

// executorsOf returns the executor processes serving in a socket directory
// under tmp (a run's TMPDIR).
func executorsOf(tmp string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && args[1] == "serve" && strings.Contains(string(b), "--socket="+tmp+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// runTemp matches the name of a run's temporary file (.<name>.<run>.tmp, ...).
var runTemp = regexp.MustCompile(`^\..+\.[0-9a-f]{12}\.(tmp|header\.part|[0-9]{8}\.part)$`)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
