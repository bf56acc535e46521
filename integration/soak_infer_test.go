package integration

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/nd/npy"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/require"
)

// The faults of the soak's infer runs (pipelines/infer on a .npy array), one
// a run.
const (
	faultConcurrent = "concurrent runs, one output"
	faultLyingNPY   = "lying .npy header"
	faultHugeShape  = "huge run-time shape"
	faultInt        = "pipeline SIGINT"
)

var inferFaults = []string{faultConcurrent, faultLyingNPY, faultHugeShape, faultInt}

// The infer soak's input: inferRows rows of 16 float32, in shards of 250
// rows (80 part files), through x [N,16] -> MatMul -> Relu -> y [N,4].
const (
	inferRows      = 20000
	inferHugeRows  = 64
	inferShardRows = 250
)

// inferSoakInputs writes the infer soak's model and input (base: the model,
// the .npy array; spare: a directory with the huge-shape models and their
// small input).
func inferSoakInputs(t *testing.T, root string) *soakInputs {
	dir := filepath.Join(root, "infer-files")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	in := &soakInputs{pipeline: "infer", spare: dir, rows: inferRows,
		base: []string{filepath.Join(dir, "model.onnx"), filepath.Join(dir, "x.npy")}}
	r := rand.New(rand.NewPCG(*soakSeed, 2))
	floats := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	writeModel(t, in.base[0], []*onnxpb.NodeProto{onnxtest.Node("MatMul", []string{"x", "w"}, []string{"h"}),
		onnxtest.Node("Relu", []string{"h"}, []string{"y"})}, 4, onnxtest.Init("w", nd.Of(floats(16*4), 16, 4)))
	writeNPYFile(t, in.base[1], nd.Of(floats(inferRows*16), inferRows, 16))
	writeNPYFile(t, filepath.Join(dir, "small.npy"), nd.Of(floats(inferHugeRows*16), inferHugeRows, 16))
	// Run-time shapes of 2^34 elements and more (64 GiB of float32 a row):
	// Pad's pads and Expand's shape are initializers, the input's rows are
	// not known before a run.
	writeModel(t, filepath.Join(dir, "huge_pad.onnx"), []*onnxpb.NodeProto{
		named(onnxtest.Node("Pad", []string{"x", "pads"}, []string{"p"}), "huge_pad"),
		onnxtest.Node("ReduceSum", []string{"p", "axes"}, []string{"y"})}, 1,
		onnxtest.Init("pads", nd.Of([]int64{0, 0, 0, 1 << 34}, 4)), onnxtest.Init("axes", nd.Of([]int64{1}, 1)))
	writeModel(t, filepath.Join(dir, "huge_expand.onnx"), []*onnxpb.NodeProto{
		named(onnxtest.Node("Expand", []string{"x", "shape"}, []string{"e"}), "huge_expand"),
		onnxtest.Node("ReduceSum", []string{"e", "axes"}, []string{"s"}, onnxtest.Int("keepdims", 0)),
		onnxtest.Node("ReduceSum", []string{"s", "axes1"}, []string{"y"})}, 1,
		onnxtest.Init("shape", nd.Of([]int64{1 << 30, 1, 16}, 3)), onnxtest.Init("axes", nd.Of([]int64{0}, 1)),
		onnxtest.Init("axes1", nd.Of([]int64{1}, 1)))
	return in
}

// writeModel writes a model of x float32 [N,16] -> nodes -> y float32 [N,cols].
func writeModel(t *testing.T, path string, nodes []*onnxpb.NodeProto, cols int, inits ...onnxtest.Named) {
	m := onnxtest.Model(17, nodes, []*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 16)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, cols)}, inits...)
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(m), 0o644))
}

func named(n *onnxpb.NodeProto, name string) *onnxpb.NodeProto { n.Name = &name; return n }

func writeNPYFile(t *testing.T, path string, a nd.Array) {
	var buf bytes.Buffer
	require.NoError(t, npy.Write(&buf, a))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func inferArgs(model, input, output string) []string {
	return []string{"--progress=0", "--backend=cpu", "--model=" + model, "--input=" + input, "--output=" + output,
		"--shard_rows=" + strconv.Itoa(inferShardRows), "--max_batch_size=64"}
}

// soakProc is a pipeline process of the soak, its output in log.
type soakProc struct {
	cmd  *exec.Cmd
	log  bytes.Buffer
	done chan struct{}
}

func startProc(t *testing.T, tmp string, name string, args ...string) *soakProc {
	p := &soakProc{cmd: exec.Command(name, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_RUNTIME_DIR=")
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	require.NoError(t, p.cmd.Start())
	go func() { p.cmd.Wait(); close(p.done) }()
	return p
}

// wait waits for p within the soak's bound (killing it past that) and
// returns its exit status (128 + the signal's number for a signal).
func (p *soakProc) wait(bad func(string, ...any)) int {
	select {
	case <-p.done:
	case <-time.After(soakBound):
		p.cmd.Process.Kill()
		<-p.done
		bad("ran past its bound of %v", soakBound)
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return p.cmd.ProcessState.ExitCode()
}

// soakInferRun makes one infer run with fault f and checks its invariants:
// beside those of every run (an exit status that says what happened, no
// temporary file or run lock left, within the bound, never the Go
// runtime's fatal error):
//   - lying .npy header (claiming more or fewer rows than the file holds):
//     exit 2 before anything runs, the message naming the file's size and
//     the size its header implies, nothing written;
//   - huge run-time shape (Pad or Expand to 2^34+ elements): the run goes on,
//     every row failed in failed.jsonl naming the node, counts reconciled;
//   - concurrent runs into one output: a second run started at a random
//     moment of the first is refused (exit 2) or runs; the first (the live
//     one) succeeds, and the outputs left are whole and the clean run's;
//   - SIGINT at a random moment: exit 130 (or 0, finished first, with the
//     clean run's outputs), no .part file left.
func soakInferRun(t *testing.T, r *rand.Rand, in *soakInputs, root string, n int, f string) soakResult {
	res := soakResult{applied: []string{f}}
	bad := func(format string, args ...any) {
		res.violations = append(res.violations, fmt.Sprintf(format, args...))
	}
	dir := filepath.Join(root, fmt.Sprintf("run%04d", n))
	out, tmp := filepath.Join(dir, "out"), filepath.Join(dir, "tmp")
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	bin, model, input := pipelineBin(t, "infer"), in.base[0], in.base[1]
	start := time.Now()
	var code int
	var log string
	switch f {
	case faultLyingNPY:
		// 10 real rows under a header of 1 to 10^9 rows, never 10.
		rows := []int{1, 9, 11, 1000, 1_000_000, 1_000_000_000}[r.IntN(6)]
		hdr, err := npy.EncodeHeader(nd.Float32, []int{rows, 16})
		require.NoError(t, err)
		input = filepath.Join(dir, "x.npy")
		require.NoError(t, os.WriteFile(input, append(hdr, make([]byte, 10*16*4)...), 0o644))
		p := startProc(t, tmp, bin, inferArgs(model, input, out)...)
		code, log = p.wait(bad), p.log.String()
		size, want := len(hdr)+10*16*4, len(hdr)+rows*16*4
		if code != 2 || !strings.Contains(log, strconv.Itoa(size)) || !strings.Contains(log, strconv.Itoa(want)) {
			bad("a header of %d rows over 10: exit status %d, want 2 with a message naming %d bytes (the file) and %d (its header's):\n%s",
				rows, code, size, want, tail(log, 8))
		}
		filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				bad("written by a run refused before it ran: %s", path)
			}
			return nil
		})
	case faultHugeShape:
		node := []string{"huge_pad", "huge_expand"}[r.IntN(2)]
		model, input = filepath.Join(in.spare, node+".onnx"), filepath.Join(in.spare, "small.npy")
		// A guard for the machine: a run that did allocate would die here,
		// not take the machine's memory.
		p := startProc(t, tmp, "prlimit", append([]string{"--as=" + strconv.Itoa(16<<30), bin}, inferArgs(model, input, out)...)...)
		code, log = p.wait(bad), p.log.String()
		if code != 0 && code != 1 {
			bad("%s: exit status %d, want 0 or 1 (the rows fail, the run goes on):\n%s", node, code, cmp.Or(fatal(log), tail(log, 8)))
			break
		}
		if s := inferSummary(out, bad); s.RowsFailed != inferHugeRows || s.RowsIn != s.RowsPredicted+s.RowsFailed {
			bad("%s: rows %d in, %d predicted, %d failed; want all %d failed", node, s.RowsIn, s.RowsPredicted, s.RowsFailed, inferHugeRows)
		}
		if fl, _ := os.ReadFile(filepath.Join(out, "failed.jsonl")); !bytes.Contains(fl, []byte(node)) {
			bad("%s: failed.jsonl does not name the node: %s", node, tail(string(fl), 2))
		}
	case faultConcurrent:
		live := startProc(t, tmp, bin, inferArgs(model, input, out)...)
		after := time.Duration(r.Float64() * float64(in.cleanDur))
		select {
		case <-live.done:
		case <-time.After(after):
		}
		second := startProc(t, tmp, bin, inferArgs(model, input, out)...)
		code, log = live.wait(bad), live.log.String()
		code2 := second.wait(bad)
		if code != 0 {
			bad("the live run: exit status %d, want 0 (a second run into its output started %s after it):\n%s", code, after.Round(time.Millisecond), tail(log, 8))
		}
		if code2 != 0 && code2 != 2 {
			bad("the second run: exit status %d, want 0 or 2 (refused):\n%s", code2, tail(second.log.String(), 8))
		}
		log += second.log.String()
		checkInferOutputs(in, out, bad)
	case faultInt:
		p := startProc(t, tmp, bin, inferArgs(model, input, out)...)
		select {
		case <-p.done:
			res.applied = nil
		case <-time.After(time.Duration(r.Float64() * float64(in.cleanDur))):
			if p.cmd.Process.Signal(syscall.SIGINT) != nil {
				res.applied = nil
			}
		}
		code, log = p.wait(bad), p.log.String()
		switch code {
		case 128 + int(syscall.SIGINT):
		case 0:
			checkInferOutputs(in, out, bad)
		default:
			bad("exit status %d, want 130 (or 0):\n%s", code, tail(log, 8))
		}
	}
	res.wall = time.Since(start)
	if f := fatal(log); f != "" {
		bad("the Go runtime's fatal error (exit status %d):\n%s", code, f)
	}
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil { // no output directory (a refused run), or one that went away
			return nil
		}
		if name := d.Name(); strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".part") ||
			strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".lock")) {
			bad("temporary file left: %s (exit status %d):\n%s", path, code, tail(log, 8))
		}
		return nil
	})
	return res
}

type inferSummaryJSON struct {
	RowsIn        int `json:"rows_in"`
	RowsPredicted int `json:"rows_predicted"`
	RowsFailed    int `json:"rows_failed"`
}

func inferSummary(out string, bad func(string, ...any)) inferSummaryJSON {
	var s inferSummaryJSON
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil || json.Unmarshal(b, &s) != nil {
		bad("no readable summary.json: %v", err)
	}
	return s
}

// checkInferOutputs checks that out holds a whole run's outputs: every row
// predicted, predictions.npy the clean run's.
func checkInferOutputs(in *soakInputs, out string, bad func(string, ...any)) {
	if s := inferSummary(out, bad); s.RowsIn != in.rows || s.RowsPredicted != in.rows {
		bad("rows %d in, %d predicted, %d failed; want %d predicted", s.RowsIn, s.RowsPredicted, s.RowsFailed, in.rows)
	}
	if got, err := os.ReadFile(filepath.Join(out, "predictions.npy")); err != nil || !bytes.Equal(got, in.clean["predictions.npy"]) {
		bad("predictions.npy is not the clean run's (%v)", err)
	}
}

// fatal returns the Go runtime's fatal error in log (with the line before
// it: "runtime: out of memory: cannot allocate ..."), or "".
func fatal(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "fatal error: ") {
			return strings.Join(lines[max(0, i-1):i+1], "\n")
		}
	}
	return ""
}
