package inference_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const shippedMLP = "../../pipelines/fashion/data/mlp-784-256-128-10.bgmlp"

func init() { register.Function1x1(classOf) }

// classOf writes a classification as "ID:class".
func classOf(c inference.Classification) string { return fmt.Sprintf("%s:%d", c.ID(), c.Top[0].Index) }

// testRows are rows [lo, hi) of the test set, scaled to [0, 1].
func testRows(t *testing.T, lo, hi int) tensor.Batch {
	t.Helper()
	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	require.NoError(t, err)
	x, err = tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x.Slice(lo, hi))
	require.NoError(t, err)
	return x
}

// writeSet writes rows [0, n) of the test set as IDX files in dir.
func writeSet(t *testing.T, dir string, n int) tensor.Source {
	t.Helper()
	src := tensor.Source{Images: filepath.Join(dir, "ref-images-idx3-ubyte"), Labels: filepath.Join(dir, "ref-labels-idx1-ubyte"), Classes: 10}
	for _, f := range []struct{ from, to string }{{tensor.SampleImagesPath(), src.Images}, {tensor.SampleLabelsPath(), src.Labels}} {
		x, err := tensor.ReadIDX(f.from)
		require.NoError(t, err)
		per := len(x.Data) / x.Dims[0]
		x.Dims[0], x.Data = n, x.Data[:n*per]
		var buf bytes.Buffer
		require.NoError(t, tensor.EncodeIDX(&buf, x))
		require.NoError(t, os.WriteFile(f.to, buf.Bytes(), 0o644))
	}
	return src
}

// The MLP handler through RowExamples, RunInference and Classify gives,
// row by row, the model's own predictions (called directly); a NaN row
// fails alone.
func TestMLPHandler(t *testing.T) {
	x := testRows(t, 0, 300)
	m, err := tensor.LoadMLP(shippedMLP)
	require.NoError(t, err)
	direct, err := m.Predict(x)
	require.NoError(t, err)
	var want []any
	for i, c := range direct.Predicted {
		want = append(want, fmt.Sprintf("%s[%d]:%d", x.Source, i, c))
	}
	bad := tensor.Batch{Source: "bad", Rows: 1, Cols: 784, X: make([]float32, 784)}
	bad.X[5] = float32(math.NaN())
	h, err := inference.MLP(shippedMLP, 784, 256, 128, 10)
	require.NoError(t, err)
	p, s := beam.NewPipelineWithRoot()
	ex, rowFailed := inference.RowExamples(s, beam.Create(s, x.Split(64)[0], x.Slice(64, 300), bad), inference.RowInput, 28, 28)
	res, failed := inference.RunInference(s, ex, h, batch.Params{MaxBatchSize: 100}, cpu())
	classes, classFailed, err := inference.Classify(context.Background(), s, res, inference.OutputProbabilities, 1, "")
	require.NoError(t, err)
	passert.Equals(s, beam.ParDo(s, classOf, classes), want...)
	own, _, err := inference.Classify(context.Background(), s.Scope("own"), res, inference.OutputClass, 1, "")
	require.NoError(t, err)
	passert.Equals(s, beam.ParDo(s, classOf, own), want...)
	passert.Empty(s, beam.Flatten(s, rowFailed, classFailed))
	passert.Equals(s, beam.ParDo(s, failureInput, failed), "bad[0] mlp 1 bad")
	ptest.RunAndValidate(t, p)
}

// MLP refuses a handler without a path or with a bad shape; Load checks
// the model's shape, naming the file.
func TestMLPHandlerChecks(t *testing.T) {
	_, err := inference.MLP("")
	assert.EqualError(t, err, "inference: MLP: no model path")
	_, err = inference.MLP("m.bgmlp", 784)
	assert.ErrorContains(t, err, "want at least 2 sizes")
	_, err = inference.MLP("m.bgmlp", 784, 0, 10)
	assert.ErrorContains(t, err, "want sizes of 1 or more")
	h, err := inference.MLP(shippedMLP, 784, 100, 10)
	require.NoError(t, err)
	_, err = h.Load(t.Context())
	assert.ErrorContains(t, err, "mlp-784-256-128-10.bgmlp")
	assert.ErrorContains(t, err, "784-256-128-10")
	h, err = inference.MLP(shippedMLP)
	require.NoError(t, err)
	m, err := h.Load(t.Context())
	require.NoError(t, err)
	assert.Greater(t, m.SizeBytes(), int64(900000))
	assert.Regexp(t, `^sha256:[0-9a-f]{32}$`, m.ID())
	assert.ErrorContains(t, m.Check(inference.Example{Inputs: []inference.Tensor{{Name: "x", Array: nd.Zeros(nd.Float32, 100)}}}),
		`input "x" has shape [100] (100 values), the model takes 784`)
	assert.ErrorContains(t, m.Check(inference.Example{Inputs: []inference.Tensor{{Name: "pixels", Array: nd.Zeros(nd.Float32, 784)}}}),
		`the model takes one, "x"`)
	assert.ErrorContains(t, m.Check(inference.Example{Inputs: []inference.Tensor{{Name: "x", Array: nd.Zeros(nd.Float64, 784)}}}),
		`input "x" is float64, the model takes float32`)
}

// The kNN handler: its class is tensor.KNN's (ties broken by the summed
// distance, which the vote shares alone do not tell), for uniform and
// distance weights, on the CPU and the stub; the reference set is read
// from IDX files and scaled as the queries are.
func TestKNNHandler(t *testing.T) {
	dir := t.TempDir()
	src := writeSet(t, dir, 600)
	refRows := testRows(t, 0, 600)
	ref, err := tensor.NewReference(refRows, 10)
	require.NoError(t, err)
	q := testRows(t, 1000, 1400)
	for _, w := range []string{tensor.WeightUniform, tensor.WeightDistance} {
		direct, err := tensor.KNN(q, ref, 4, w)
		require.NoError(t, err)
		var want []any
		for i, c := range direct.Predicted {
			want = append(want, fmt.Sprintf("%s[%d]:%d", q.Source, 1000+i, c))
		}
		h, err := inference.KNN(src, 4, inference.KNNWeights(w), inference.KNNScaler(tensor.Scaler{Mode: tensor.ScaleUnit}))
		require.NoError(t, err)
		p, s := beam.NewPipelineWithRoot()
		ex, _ := inference.RowExamples(s, beam.CreateList(s, q.Split(100)), inference.RowInput)
		res, failed := inference.RunInference(s, ex, h, batch.Params{MaxBatchSize: 150}, step.Using(backend.MustNew(backend.Config{Default: backend.CPU})))
		classes, _, err := inference.Classify(context.Background(), s, res, inference.OutputClass, 1, "")
		require.NoError(t, err)
		passert.Equals(s, beam.ParDo(s, classOf, classes), want...)
		passert.Empty(s, failed)
		ptest.RunAndValidate(t, p)
	}

	// The stub: class 0 for every row.
	h, err := inference.KNN(src, 3)
	require.NoError(t, err)
	p, s := beam.NewPipelineWithRoot()
	ex, _ := inference.RowExamples(s, beam.Create(s, q.Slice(0, 2)), inference.RowInput)
	res, _ := inference.RunInference(s, ex, h, batch.Params{}, step.Using(backend.MustNew(backend.Config{Default: backend.Stub})))
	const stub = "t10k-images-idx3-ubyte.gz[%d] knn:ref-images-idx3-ubyte:k=3:uniform: votes=[0 0 0 0 0 0 0 0 0 0] class=[0] | label=[%d]"
	passert.Equals(s, beam.ParDo(s, describe, res), fmt.Sprintf(stub, 1000, q.Labels[0]), fmt.Sprintf(stub, 1001, q.Labels[1]))
	ptest.RunAndValidate(t, p)
}

// KNN refuses what cannot work at construction; a reference set with fewer
// rows than k, or a bad label, fails its load with the reason.
func TestKNNHandlerChecks(t *testing.T) {
	src := writeSet(t, t.TempDir(), 3)
	for _, c := range []struct {
		src  tensor.Source
		k    int
		opts []inference.KNNOption
		want string
	}{
		{tensor.Source{Images: src.Images, Classes: 10}, 1, nil, "want both an images and a labels file"},
		{tensor.Source{Images: src.Images, Labels: src.Labels}, 1, nil, "0 classes, want 1 or more"},
		{src, 0, nil, "k=0, want 1 or more"},
		{src, 1, []inference.KNNOption{inference.KNNWeights("cosine")}, `weights "cosine"`},
		{src, 1, []inference.KNNOption{inference.KNNScaler(tensor.Scaler{Mode: "log"})}, `scaler mode "log"`},
	} {
		_, err := inference.KNN(c.src, c.k, c.opts...)
		assert.ErrorContains(t, err, c.want)
	}
	h, err := inference.KNN(src, 5)
	require.NoError(t, err)
	_, err = h.Load(t.Context())
	assert.EqualError(t, err, "knn: k=5 is more than the 3 rows of the reference set: want k <= 3")
	small := src
	small.Classes = 2 // the labels are 9, 2, 1
	h, err = inference.KNN(small, 1)
	require.NoError(t, err)
	_, err = h.Load(t.Context())
	assert.ErrorContains(t, err, "label 9 is not a class in [0, 2)")
}

// RowExamples: a row per example, shaped, named by its source and index,
// its label carried; a batch whose rows do not fill the shape fails, a
// failure per row.
func TestRowExamples(t *testing.T) {
	b := tensor.Batch{Source: "f", Offset: 10, Rows: 2, Cols: 4, X: []float32{1, 2, 3, 4, 5, 6, 7, 8}, Labels: []int32{3, -1}}
	odd := tensor.Batch{Source: "g", Rows: 1, Cols: 3, X: []float32{1, 2, 3}}
	p, s := beam.NewPipelineWithRoot()
	ex, failed := inference.RowExamples(s, beam.Create(s, b, odd), "pixels", 2, 2)
	passert.Equals(s, beam.ParDo(s, describeExample, ex), "f[10] pixels=float32[2x2] [1 2 3 4] label=3", "f[11] pixels=float32[2x2] [5 6 7 8] label=-1")
	passert.Equals(s, beam.ParDo(s, failureInput, failed), "g[0] rows 1 g")
	ptest.RunAndValidate(t, p)
	assert.Panics(t, func() { inference.RowExamples(s, beam.Create(s, b), "") })
	assert.Panics(t, func() { inference.RowExamples(s, beam.Create(s, b), "x", 0, 4) })
}

func describeExample(e inference.Example) string {
	x, _ := e.Input("pixels")
	l, _ := e.Carried(inference.CarryLabel)
	return fmt.Sprintf("%s pixels=%v %v label=%d", e.ID(), x, nd.MustAs[float32](x), nd.MustAs[int32](l)[0])
}

func init() { register.Function1x1(describeExample) }

// TopK of an integer output: the model's own classes, best first, score 0;
// of a float output: the best scores; anything else is an error.
func TestTopK(t *testing.T) {
	r := inference.Result{Source: "f", Index: 2, Outputs: []inference.Tensor{
		{Name: "class", Array: nd.Scalar(int32(2))},
		{Name: "ranked", Array: nd.Of([]int64{1, 0, 2})},
		{Name: "scores", Array: nd.Of([]float32{0.2, 0.5, 0.5})},
		{Name: "image", Array: nd.Zeros(nd.Float32, 2, 2)},
	}}
	labels := []string{"a", "b", "c"}
	c, err := inference.TopK(r, "class", 3, labels)
	require.NoError(t, err)
	assert.Equal(t, []inference.Class{{Index: 2, Label: "c"}}, c.Top)
	assert.Equal(t, "f[2]", c.ID())
	c, err = inference.TopK(r, "ranked", 2, nil)
	require.NoError(t, err)
	assert.Equal(t, []inference.Class{{Index: 1}, {Index: 0}}, c.Top)
	c, err = inference.TopK(r, "scores", 2, labels)
	require.NoError(t, err)
	assert.Equal(t, []inference.Class{{Index: 1, Label: "b", Score: 0.5}, {Index: 2, Label: "c", Score: 0.5}}, c.Top, "ties to the lower index")
	_, err = inference.TopK(r, "image", 1, nil)
	assert.EqualError(t, err, `output "image" is float32[2x2], not a vector of scores or classes`)
	_, err = inference.TopK(r, "class", 1, labels[:2])
	assert.EqualError(t, err, `output "class": class 2 has no label (2 labels)`)
	_, err = inference.TopK(r, "nope", 1, nil)
	assert.EqualError(t, err, `no output "nope"`)
}
