package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	steptest.MaybeServe() // this binary also serves as the tests' GPU executor
	flags.Progress = 0
	ptest.Main(m)
}

const (
	testImages = "data/t10k-images-idx3-ubyte.gz"
	testLabels = "data/t10k-labels-idx1-ubyte.gz"
	testModel  = "data/" + shippedModel
)

func selector(t *testing.T, def backend.Kind) *backend.Selector {
	t.Helper()
	sel, err := backend.New(backend.Config{Default: def, Steps: step.Backends(tensor.StepDecode, tensor.StepStandardize, tensor.StepMLP, tensor.StepKNN)})
	require.NoError(t, err)
	return sel
}

// slice writes the first n images (and labels) of the test set as IDX
// files images-idx3-ubyte / labels-idx1-ubyte with prefix name in dir.
func slice(t *testing.T, dir, name string, n int) tensor.Source {
	t.Helper()
	x, err := tensor.ReadIDX(testImages)
	require.NoError(t, err)
	x.Dims[0] = n
	x.Data = x.Data[:n*28*28]
	src := tensor.Source{Images: filepath.Join(dir, name+"-images-idx3-ubyte"), Labels: filepath.Join(dir, name+"-labels-idx1-ubyte"),
		BatchRows: 64, Height: 28, Width: 28}
	writeIDX(t, src.Images, x)
	l, err := tensor.ReadIDX(testLabels)
	require.NoError(t, err)
	l.Dims[0] = n
	l.Data = l.Data[:n]
	writeIDX(t, src.Labels, l)
	return src
}

func writeIDX(t *testing.T, path string, x tensor.IDX) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, tensor.EncodeIDX(&buf, x))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func readFailures(t *testing.T, dir string) []step.Failure {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "failed.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var out []step.Failure
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var fl step.Failure
		require.NoError(t, json.Unmarshal(sc.Bytes(), &fl))
		out = append(out, fl)
	}
	return out
}

// docs/fashion.md's promise: with no arguments, the shipped model on the whole
// embedded test set reaches 0.88 or better.
func TestDefaultRunAccuracy(t *testing.T) {
	*output = t.TempDir()
	defer func() { *output = "out/fashion" }()
	var buf bytes.Buffer
	code, err := run(context.Background(), &buf)
	require.NoError(t, err)
	require.Equal(t, 0, code)
	t.Log("\n" + buf.String())
	assert.Contains(t, buf.String(), "records: 10000 in, 10000 predicted, 0 failed; 0 failures")

	var m metrics
	data, err := os.ReadFile(filepath.Join(*output, metricsFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	assert.Equal(t, 10000, m.Count)
	require.NotNil(t, m.Accuracy)
	assert.GreaterOrEqual(t, *m.Accuracy, 0.88)
	total := 0
	for _, r := range m.Confusion {
		for _, v := range r {
			total += v
		}
	}
	assert.Equal(t, 10000, total)
	for _, c := range m.PerClass {
		assert.Equal(t, 1000, c.Support, c.Name)
	}

	csv, err := os.ReadFile(filepath.Join(*output, predictionsFile))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	require.Len(t, lines, 10001)
	assert.Equal(t, "index,label,predicted", lines[0])
	assert.Equal(t, "0,9,9", lines[1]) // the first test image is an ankle boot
	assert.True(t, strings.HasPrefix(lines[10000], "9999,"))

	f, err := os.Open(filepath.Join(*output, confusionFile))
	require.NoError(t, err)
	defer f.Close()
	_, err = png.Decode(f)
	require.NoError(t, err)
	assert.Empty(t, readFailures(t, *output))
}

// A slice of the test set through the pipeline (decode, standardize,
// RunInference with the MLP, Classify) on prism gives, row by row, the
// predictions of the model called directly, in predictions.csv.
func TestMLPMatchesDirectPrediction(t *testing.T) {
	src := slice(t, t.TempDir(), "t10k", 300)
	m, err := tensor.LoadMLP(testModel)
	require.NoError(t, err)
	x, err := tensor.ReadDataset(src.Images, src.Labels)
	require.NoError(t, err)
	x, err = tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x)
	require.NoError(t, err)
	direct, err := m.Predict(x)
	require.NoError(t, err)
	want := "index,label,predicted\n"
	for i, c := range direct.Predicted {
		want += fmt.Sprintf("%d,%d,%d\n", i, x.Labels[i], c)
	}
	_, files := runOutputs(t, Config{Sources: []tensor.Source{src}, Model: ModelMLP, MLP: testModel,
		Batching: batch.Params{MinBatchSize: 1, MaxBatchSize: 3}}, selector(t, backend.CPU))
	assert.Equal(t, want, string(files[predictionsFile]))
	assert.Empty(t, files["failed.jsonl"])
}

// kNN through the pipeline (the reference set loaded by the kNN handler,
// Classify over its class) gives, row by row, tensor.KNN's predictions
// called directly, ties between classes broken as it breaks them (by the
// summed distance, at k=4 frequent), for both weightings.
func TestKNNMatchesDirectPrediction(t *testing.T) {
	ref := t.TempDir()
	slice(t, ref, "train", 500)
	for _, n := range []string{"images-idx3", "labels-idx1"} {
		require.NoError(t, os.Rename(filepath.Join(ref, "train-"+n+"-ubyte"), filepath.Join(ref, "train-"+n+"-ubyte.gz")))
	}
	refSrc, err := trainingSet(ref, 64)
	require.NoError(t, err)
	all, err := tensor.ReadDataset(testImages, testLabels)
	require.NoError(t, err)
	all, err = tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(all)
	require.NoError(t, err)
	reference, err := tensor.NewReference(all.Slice(0, 500), 10)
	require.NoError(t, err)
	src := slice(t, t.TempDir(), "t10k", 800) // rows 500 to 799 are not in the reference
	for _, w := range []string{tensor.WeightUniform, tensor.WeightDistance} {
		direct, err := tensor.KNN(all.Slice(0, 800), reference, 4, w)
		require.NoError(t, err)
		want := "index,label,predicted\n"
		for i, c := range direct.Predicted {
			want += fmt.Sprintf("%d,%d,%d\n", i, all.Labels[i], c)
		}
		_, files := runOutputs(t, Config{Sources: []tensor.Source{src}, Model: ModelKNN, Reference: refSrc, K: 4, Weights: w}, selector(t, backend.CPU))
		assert.Equal(t, want, string(files[predictionsFile]), w)
	}
}

// Bad inputs: each is reported with its file and reason, the good records
// are predicted, and the counts reconcile.
func TestBadInputsAreReportedAndCountsReconcile(t *testing.T) {
	dir := t.TempDir()
	slice(t, dir, "a-good", 200)

	// Truncated images.
	b := slice(t, dir, "b-truncated", 50)
	data, err := os.ReadFile(b.Images)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b.Images, data[:len(data)-100], 0o644))

	// Wrong magic.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c-magic-images-idx3-ubyte"), []byte("GIF89a, not an IDX file"), 0o644))

	// Labels of another count.
	d := slice(t, dir, "d-count", 40)
	l, err := tensor.ReadIDX(d.Labels)
	require.NoError(t, err)
	l.Dims[0], l.Data = 39, l.Data[:39]
	writeIDX(t, d.Labels, l)

	// Images of the wrong size: 10x10.
	writeIDX(t, filepath.Join(dir, "e-size-images-idx3-ubyte"), tensor.IDX{Type: tensor.IDXUint8, Dims: []int{3, 10, 10}, Data: make([]byte, 300)})

	// float32 images, two rows with NaN and infinity.
	fx := tensor.IDX{Type: tensor.IDXFloat32, Dims: []int{5, 28, 28}, Data: make([]byte, 5*784*4)}
	binary.BigEndian.PutUint32(fx.Data[1*784*4+17*4:], math.Float32bits(float32(math.NaN())))
	binary.BigEndian.PutUint32(fx.Data[3*784*4:], math.Float32bits(float32(math.Inf(1))))
	writeIDX(t, filepath.Join(dir, "f-nan-images-idx3-ubyte"), fx)

	sources, err := discoverSources(dir, 64)
	require.NoError(t, err)
	require.Len(t, sources, 6)
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := execute(context.Background(), Config{Sources: sources, Output: out, Model: ModelMLP, MLP: testModel,
		Batching: batch.Params{MaxBatchSize: 4}}, selector(t, backend.CPU), &buf)
	require.NoError(t, err, buf.String()) // execute checks in = predicted + failed
	t.Log("\n" + buf.String())
	assert.Equal(t, 200+5, sum.In) // the files that could not be read contribute no records
	assert.Equal(t, 200+3, sum.Predicted)
	assert.Equal(t, 2, sum.Failed)

	byKey := map[string][]step.Failure{}
	for _, f := range readFailures(t, out) {
		byKey[f.Key] = append(byKey[f.Key], f)
	}
	reason := func(key string) string {
		require.Len(t, byKey[key], 1, key)
		return byKey[key][0].Reason
	}
	assert.Contains(t, reason("b-truncated-images-idx3-ubyte"), "b-truncated-images-idx3-ubyte")
	assert.Contains(t, reason("b-truncated-images-idx3-ubyte"), "truncated")
	assert.Contains(t, reason("c-magic-images-idx3-ubyte"), "magic")
	assert.Contains(t, reason("d-count-images-idx3-ubyte"), "39 labels for 40 images")
	assert.Contains(t, reason("e-size-images-idx3-ubyte"), "images are 10x10, want 28x28")
	nan := byKey["f-nan-images-idx3-ubyte"]
	require.Len(t, nan, 2)
	assert.Equal(t, "f-nan-images-idx3-ubyte[1]", nan[0].Input)
	assert.Contains(t, nan[0].Reason, "NaN")
	assert.Equal(t, "f-nan-images-idx3-ubyte[3]", nan[1].Input)

	csv, err := os.ReadFile(filepath.Join(out, predictionsFile))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(csv), "source,index,label,predicted\n"))
	assert.Contains(t, string(csv), "\nf-nan-images-idx3-ubyte,4,,") // unlabelled rows have an empty label
}

// kNN with a small reference set (a slice of the test set posing as the
// training set) classifies a disjoint... here, the same rows: each is its own
// nearest neighbour, so k=1 is exact.
func TestKNNPipeline(t *testing.T) {
	ref := t.TempDir()
	slice(t, ref, "train", 400)
	for _, n := range []string{"images-idx3", "labels-idx1"} { // the names trainingSet expects, gzip not required
		require.NoError(t, os.Rename(filepath.Join(ref, "train-"+n+"-ubyte"), filepath.Join(ref, "train-"+n+"-ubyte.gz")))
	}
	refSrc, err := trainingSet(ref, 64)
	require.NoError(t, err)
	q := slice(t, t.TempDir(), "q", 400)
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := execute(context.Background(), Config{Sources: []tensor.Source{q}, Output: out, Model: ModelKNN,
		Reference: refSrc, K: 1}, selector(t, backend.CPU), &buf)
	require.NoError(t, err)
	t.Log("\n" + buf.String())
	assert.Equal(t, 400, sum.Predicted)
	require.NotNil(t, sum.Accuracy)
	assert.Equal(t, 1.0, *sum.Accuracy)
}

func TestMissingTrainingSetSaysHowToGetIt(t *testing.T) {
	_, err := trainingSet(t.TempDir(), 64)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apt-get install dataset-fashion-mnist")
	assert.Contains(t, err.Error(), "github.com/zalandoresearch/fashion-mnist")
}

// --backend=stub: the plumbing runs; every prediction is class 0.
func TestStubBackend(t *testing.T) {
	src := slice(t, t.TempDir(), "t10k", 100)
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := execute(context.Background(), Config{Sources: []tensor.Source{src}, Output: out, Model: ModelMLP, MLP: testModel},
		selector(t, backend.Stub), &buf)
	require.NoError(t, err)
	assert.Equal(t, 100, sum.Predicted)
	csv, err := os.ReadFile(filepath.Join(out, predictionsFile))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(csv)), "\n")[1:] {
		require.True(t, strings.HasSuffix(line, ",0"), line)
	}
}

func TestFlagErrors(t *testing.T) {
	defer func() { *model, *k, *output = ModelMLP, 5, "out/fashion" }()
	*output = t.TempDir()
	*model = "svm"
	_, err := configFromFlags()
	assert.EqualError(t, err, "--model=svm: want mlp, knn or onnx")
	*model, *k = ModelKNN, 0
	_, err = configFromFlags()
	assert.EqualError(t, err, "--k=0: want a positive number of neighbours")
}

func TestStrict(t *testing.T) {
	dir := t.TempDir()
	slice(t, dir, "good", 50)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad-images-idx3-ubyte"), []byte("nope"), 0o644))
	// A readable file whose rows are all rejected makes records fail.
	fx := tensor.IDX{Type: tensor.IDXFloat32, Dims: []int{1, 28, 28}, Data: make([]byte, 784*4)}
	binary.BigEndian.PutUint32(fx.Data, math.Float32bits(float32(math.NaN())))
	writeIDX(t, filepath.Join(dir, "nan-images-idx3-ubyte"), fx)
	*input, *output = dir, t.TempDir()
	defer func() { *input, *output, *strict = "", "out/fashion", false }()
	var buf bytes.Buffer
	code, err := run(context.Background(), &buf)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	*strict = true
	code, err = run(context.Background(), &buf)
	assert.Equal(t, 1, code)
	assert.ErrorContains(t, err, "--strict: 2 failures (1 of 51 records failed)")
}

// gpuSelector is --backend=gpu with this test binary as the executor.
func gpuSelector(t *testing.T) *backend.Selector {
	t.Helper()
	sel, err := backend.New(backend.Config{Default: backend.GPU, Steps: step.Backends(tensor.StepDecode, tensor.StepStandardize, tensor.StepMLP, tensor.StepKNN), Executor: steptest.UseExecutor()})
	require.NoError(t, err)
	return sel
}

func runOutputs(t *testing.T, cfg Config, sel *backend.Selector) (summary, map[string][]byte) {
	t.Helper()
	cfg.Output = t.TempDir()
	var buf bytes.Buffer
	sum, err := execute(context.Background(), cfg, sel, &buf)
	require.NoError(t, err, buf.String())
	files := map[string][]byte{}
	for _, name := range []string{metricsFile, predictionsFile, "failed.jsonl"} {
		data, err := os.ReadFile(filepath.Join(cfg.Output, name))
		require.NoError(t, err)
		files[name] = data
	}
	return sum, files
}

// --backend=gpu through an out-of-process executor gives the CPU's outputs,
// for the MLP (RunInference) and for kNN (with its reference as side data).
func TestGPUBackendMatchesCPU(t *testing.T) {
	dir := t.TempDir()
	src := slice(t, dir, "t10k", 1000)
	ref := t.TempDir()
	slice(t, ref, "train", 600)
	for _, n := range []string{"images-idx3", "labels-idx1"} {
		require.NoError(t, os.Rename(filepath.Join(ref, "train-"+n+"-ubyte"), filepath.Join(ref, "train-"+n+"-ubyte.gz")))
	}
	refSrc, err := trainingSet(ref, 64)
	require.NoError(t, err)
	for _, cfg := range []Config{
		{Sources: []tensor.Source{src}, Model: ModelMLP, MLP: testModel},
		{Sources: []tensor.Source{src}, Model: ModelKNN, Reference: refSrc, K: 5},
	} {
		_, cpu := runOutputs(t, cfg, selector(t, backend.CPU))
		sum, gpu := runOutputs(t, cfg, gpuSelector(t))
		assert.Equal(t, cpu, gpu, cfg.Model)
		for _, st := range sum.Steps {
			if st.Step != tensor.StepDecode.Name() {
				assert.Equal(t, backend.GPU, st.Impl, st.Step)
			}
		}
	}
}

// The kNN reference set is side data: built once per worker process
// (however many DoFn instances and bundles classify), encoded and hashed
// once, and sent to the executor once, which keeps it for every later batch.
func TestKNNReferenceOncePerProcess(t *testing.T) {
	src := slice(t, t.TempDir(), "t10k", 1000)
	ref := t.TempDir()
	slice(t, ref, "train", 700) // a reference no other test sends
	for _, n := range []string{"images-idx3", "labels-idx1"} {
		require.NoError(t, os.Rename(filepath.Join(ref, "train-"+n+"-ubyte"), filepath.Join(ref, "train-"+n+"-ubyte.gz")))
	}
	refSrc, err := trainingSet(ref, 64)
	require.NoError(t, err)
	cfg := Config{Sources: []tensor.Source{src}, Model: ModelKNN, Reference: refSrc, K: 5}
	before := tensor.StepKNN.SideStats()
	sum, _ := runOutputs(t, cfg, gpuSelector(t))
	after := tensor.StepKNN.SideStats()
	var batches int64
	for _, st := range sum.Steps {
		if st.Step == tensor.StepKNN.Name() {
			batches = st.Batches
		}
	}
	require.Greater(t, batches, int64(1), "the queries come in several batches")
	assert.Equal(t, 1, after.Encoded-before.Encoded, "reference encoded and hashed once")
	assert.Equal(t, 1, after.Sent-before.Sent, "reference sent to the executor once")
	assert.Equal(t, 1000, sum.Predicted)
}

// The executor dies in the middle of a batch: the client starts a new one
// and sends the batch again; the outputs are those of an undisturbed run,
// with nothing lost or predicted twice.
func TestKilledExecutorLosesNothing(t *testing.T) {
	src := slice(t, t.TempDir(), "t10k", 1000)
	cfg := Config{Sources: []tensor.Source{src}, Model: ModelMLP, MLP: testModel}
	_, want := runOutputs(t, cfg, selector(t, backend.CPU))

	require.NoError(t, client.CloseShared()) // a fresh executor, that crashes once
	mark := filepath.Join(t.TempDir(), "crashed")
	executortest.CrashOnce(4, mark)
	defer func() {
		executortest.CrashOnce(0, "")
		client.CloseShared()
	}()
	sum, got := runOutputs(t, cfg, gpuSelector(t))
	assert.FileExists(t, mark, "the executor crashed")
	assert.Equal(t, want, got)
	assert.Equal(t, 1000, sum.Predicted)
	cl, err := client.Shared(executortest.Use())
	require.NoError(t, err)
	assert.Equal(t, 1, cl.Stats().Restarts)
}

// An executor that dies on every batch: under --backend=auto every batch
// falls back to the CPU, counted, and the outputs are the CPU's; under
// --backend=gpu every batch fails, named, and the counts reconcile.
func TestExecutorGoneAtRunTime(t *testing.T) {
	src := slice(t, t.TempDir(), "t10k", 300)
	cfg := Config{Sources: []tensor.Source{src}, Model: ModelMLP, MLP: testModel}
	_, want := runOutputs(t, cfg, selector(t, backend.CPU))

	require.NoError(t, client.CloseShared())
	executortest.CrashAlways(true)
	defer func() {
		executortest.CrashAlways(false)
		client.CloseShared()
	}()
	auto, err := backend.New(backend.Config{Default: backend.Auto, Steps: step.Backends(tensor.StepDecode, tensor.StepStandardize, tensor.StepMLP, tensor.StepKNN), Executor: steptest.UseExecutor()})
	require.NoError(t, err)
	sum, got := runOutputs(t, cfg, auto)
	require.Empty(t, string(got["failed.jsonl"]), "under auto no batch fails")
	for name := range want {
		assert.Equal(t, string(want[name]), string(got[name]), name)
	}
	fallbacks := map[string]int64{}
	for _, st := range sum.Steps {
		fallbacks[st.Step] = st.Fallbacks
	}
	assert.Positive(t, fallbacks[tensor.StepMLP.Name()])
	assert.Positive(t, fallbacks[tensor.StepStandardize.Name()])

	cfg.Output = t.TempDir()
	var buf bytes.Buffer
	sum, err = execute(context.Background(), cfg, gpuSelector(t), &buf)
	require.NoError(t, err, buf.String()) // reconciled
	assert.Equal(t, 0, sum.Predicted)
	assert.Equal(t, 300, sum.Failed)
	for _, f := range readFailures(t, cfg.Output) {
		assert.Contains(t, f.Reason, "GPU unavailable")
	}
}

// --model=onnx: the shipped CNN (embedded) classifies the 10,000 test images
// through RunInference and Classify with accuracy 0.91 or better on every backend:
// the CPU, and auto and gpu with the reference executor (every operator of
// the CNN has a GPU kernel, so both run it there).
// --model_path names another ONNX model.
func TestONNXModelAccuracy(t *testing.T) {
	ctx := context.Background()
	srcs, err := discoverSources(embeddedImages, 256)
	require.NoError(t, err)
	h, err := inference.ONNX(ctx, embeddedONNX)
	require.NoError(t, err)
	cfg := Config{Sources: srcs, Model: ModelONNX, MLP: embeddedONNX, Handler: h}
	require.Empty(t, h.Model().OpsWithoutGPU())
	for _, kind := range []backend.Kind{backend.CPU, backend.Auto, backend.GPU} {
		sel, err := backend.New(backend.Config{Default: kind, Steps: step.Backends(tensor.StepDecode, tensor.StepStandardize, h.Step()),
			Executor: steptest.UseExecutor()})
		require.NoError(t, err)
		sum, _ := runOutputs(t, cfg, sel)
		assert.Equal(t, 10000, sum.In, kind)
		assert.Equal(t, 10000, sum.Predicted, kind)
		require.NotNil(t, sum.Accuracy)
		assert.GreaterOrEqual(t, *sum.Accuracy, 0.91, kind)
		t.Logf("%s: accuracy %.4f", kind, *sum.Accuracy)
		for _, st := range sum.Steps {
			if st.Step == onnxstep.StepRun.Name() && kind != backend.CPU {
				assert.Equal(t, backend.GPU, st.Impl, kind)
			}
		}
	}
	*model, *modelPath, *output = ModelONNX, "data/cnn-fashion.onnx", t.TempDir()
	defer func() { *model, *modelPath, *output = ModelMLP, "", "out/fashion" }()
	c, err := configFromFlags()
	require.NoError(t, err)
	assert.Equal(t, "data/cnn-fashion.onnx", c.MLP)
	require.IsType(t, &inference.ONNXHandler{}, c.Handler)
	assert.Equal(t, h.Model().ID, c.Handler.(*inference.ONNXHandler).Model().ID, "the embedded model is the file's")
	*modelPath = "data/" + shippedModel
	_, err = configFromFlags()
	assert.ErrorContains(t, err, "--model_path")
}
