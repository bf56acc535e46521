package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { ptest.Main(m) }

const cnn = "../../pipelines/fashion/data/cnn-fashion.onnx"

var fashionLabels = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// run runs the program with its flags set to args and the backend kind.
func run(t *testing.T, kind backend.Kind, args map[string]string) (int, string, error) {
	t.Helper()
	defer func(m, i, l, o string, k int) { *model, *input, *labels, *output, *topK = m, i, l, o, k }(*model, *input, *labels, *output, *topK)
	*model, *input, *labels, *output = args["model"], args["input"], args["labels_file"], args["output"]
	fmt.Sscan(args["top_k"], topK)
	p := program
	p.Flags = &job.Flags{Backend: backend.Flags{Backend: string(kind)}}
	var out bytes.Buffer
	code, err := job.RunMain(context.Background(), p, &out)
	return code, out.String(), err
}

// The program classifies rows of the Fashion-MNIST test set with the
// shipped CNN: each row's top classes, labelled, best first, the model's
// own (called directly); a row that does not parse and a row with a NaN
// fail alone, in failed.jsonl.
func TestClassify(t *testing.T) {
	dir := t.TempDir()
	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	require.NoError(t, err)
	x, err = tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x.Slice(0, 12))
	require.NoError(t, err)
	var csv strings.Builder
	for i := 0; i < x.Rows; i++ {
		fmt.Fprintf(&csv, "img%02d", i)
		for _, v := range x.Row(i) {
			fmt.Fprintf(&csv, ",%g", v)
		}
		csv.WriteString("\n")
	}
	csv.WriteString("short,1,2,3\n")
	csv.WriteString("nan" + strings.Repeat(",NaN", 784) + "\n")
	rows := filepath.Join(dir, "rows.csv")
	require.NoError(t, os.WriteFile(rows, []byte(csv.String()), 0o644))
	labelsFile := filepath.Join(dir, "labels.txt")
	require.NoError(t, os.WriteFile(labelsFile, []byte(strings.Join(fashionLabels, "\n")+"\n"), 0o644))

	m, err := onnxstep.Load(context.Background(), cnn)
	require.NoError(t, err)
	direct, err := m.Run([]nd.Array{nd.Of(x.X, x.Rows, 1, 28, 28)})
	require.NoError(t, err)
	scores := nd.MustAs[float32](direct[0])
	var want []string
	for i := 0; i < x.Rows; i++ {
		row := scores[i*10 : (i+1)*10]
		order := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		sort.SliceStable(order, func(a, b int) bool { return row[order[a]] > row[order[b]] })
		for r, c := range order[:2] {
			want = append(want, fmt.Sprintf("img%02d,%d,%d,%s", i, r+1, c, fashionLabels[c]))
		}
	}

	out := filepath.Join(dir, "out")
	code, text, err := run(t, backend.CPU, map[string]string{"model": cnn, "input": rows, "labels_file": labelsFile, "top_k": "2", "output": out})
	require.NoError(t, err, text)
	assert.Equal(t, 0, code)
	data, err := os.ReadFile(filepath.Join(out, "classes.csv"))
	require.NoError(t, err)
	var got []string
	correct := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, ",")
		require.Len(t, f, 5, line)
		got = append(got, strings.Join(f[:4], ","))
		if f[1] == "1" {
			var i int
			fmt.Sscanf(f[0], "img%d", &i)
			if fmt.Sprint(x.Labels[i]) == f[2] {
				correct++
			}
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got)
	assert.GreaterOrEqual(t, correct, 10, "the CNN gets most of 12 test images right")

	fl, err := os.ReadFile(filepath.Join(out, "failed.jsonl"))
	require.NoError(t, err)
	var failures []step.Failure
	for _, line := range strings.Split(strings.TrimSpace(string(fl)), "\n") {
		var f step.Failure
		require.NoError(t, json.Unmarshal([]byte(line), &f))
		failures = append(failures, f)
	}
	sort.Slice(failures, func(i, j int) bool { return failures[i].Input < failures[j].Input })
	require.Len(t, failures, 2)
	assert.Equal(t, "nan", failures[0].Input)
	assert.Equal(t, "onnx", failures[0].Step)
	assert.Contains(t, failures[0].Reason, fmt.Sprint(math.NaN()))
	assert.Equal(t, "short", failures[1].Input)
	assert.Equal(t, "3 values, the model's input takes 784 ([1x28x28])", failures[1].Reason)
}

// A missing flag, or a model that is not one, is an error before anything
// runs (exit status 2), naming the reason.
func TestFlagErrors(t *testing.T) {
	code, _, err := run(t, backend.CPU, map[string]string{"top_k": "1"})
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "--model and --input are required")
	bad := filepath.Join(t.TempDir(), "bad.onnx")
	require.NoError(t, os.WriteFile(bad, []byte("not a model"), 0o644))
	code, _, err = run(t, backend.CPU, map[string]string{"model": bad, "input": bad, "top_k": "1"})
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "bad.onnx")
}

// docs/inference.md shows this program: its main and its build, as they
// are here.
func TestDocsShowTheProgram(t *testing.T) {
	doc, err := os.ReadFile("../../docs/inference.md")
	require.NoError(t, err)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	for _, part := range []string{"var program = job.Pipeline{", "func main() { job.Main(program) }", "func build(ctx context.Context, s beam.Scope, r *job.Run) error {"} {
		i := strings.Index(string(src), part)
		require.GreaterOrEqual(t, i, 0, part)
		end := strings.Index(string(src[i:]), "\n}\n")
		block := string(src[i:])
		if end >= 0 && !strings.HasSuffix(part, "}") {
			block = block[:end+2]
		} else {
			block = part
		}
		assert.Contains(t, string(doc), block, "docs/inference.md shows %q as main.go has it", part)
	}
}

// The command docs/inference.md runs: testdata/fashion.csv holds the
// first four images of the Fashion-MNIST test set (pixels/255, four
// significant digits), an ankle boot, a pullover and two trousers, which
// the shipped CNN names.
func TestDocumentedRun(t *testing.T) {
	out := t.TempDir()
	code, text, err := run(t, backend.Auto, map[string]string{"model": cnn, "input": "testdata/fashion.csv",
		"labels_file": "testdata/fashion-labels.txt", "top_k": "2", "output": out})
	require.NoError(t, err, text)
	assert.Equal(t, 0, code)
	data, err := os.ReadFile(filepath.Join(out, "classes.csv"))
	require.NoError(t, err)
	var best []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Split(line, ","); f[1] == "1" {
			best = append(best, f[0]+" "+f[3])
		}
	}
	sort.Strings(best)
	assert.Equal(t, []string{"t10k-0 Ankle boot", "t10k-1 Pullover", "t10k-2 Trouser", "t10k-3 Trouser"}, best)
	assert.NoFileExists(t, filepath.Join(out, "failed.jsonl"), "no row failed")
}
