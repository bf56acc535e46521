package inference_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	_ "github.com/beamgpu/beamgpu/stubs/onnx"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() {
	register.Function1x1(describeResult)
	register.Function1x1(failureKey)
}

var cpuONNX = step.Using(backend.MustNew(backend.Config{Default: backend.CPU}))

// describeResult writes a result as "key index model: y=[...]".
func describeResult(r inference.Result) string {
	y, _ := r.Output("y")
	return fmt.Sprintf("%s %d %s: y=%v", r.Key, r.Index, r.ModelID, nd.MustAs[float32](y))
}

func failureKey(f step.Failure) string { return f.Input }

// writeDense writes a model y = x W^T + b (x float32[N, 3], y float32[N, 2])
// and returns its path.
func writeDense(t *testing.T, dir string, scale float32) string {
	w := nd.Of([]float32{1, 0, 0, 0, 1, 1}, 2, 3)
	nd.MustAs[float32](w)[0] = scale
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Gemm", []string{"x", "w", "b"}, []string{"y"}, onnxtest.Int("transB", 1))},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 3)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 2)},
		onnxtest.Init("w", w), onnxtest.Init("b", nd.Of([]float32{0, 10}, 2)))
	path := filepath.Join(dir, fmt.Sprintf("dense%g.onnx", scale))
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(m), 0o644))
	return path
}

func row(key string, i int64, x nd.Array) inference.Example {
	return inference.Example{Key: key, Index: i, Inputs: []inference.Tensor{{Name: "x", Array: x}}}
}

// RunInference with an ONNX model: keyed and unkeyed examples get their
// outputs with their key or index and the model's ID; bad rows (a wrong
// shape, a wrong type, a NaN with CheckFinite) are failures of their own
// while the rest complete; two models each load once and run side by side.
func TestRunInferenceONNX(t *testing.T) {
	dir := t.TempDir()
	h, err := inference.ONNX(t.Context(), writeDense(t, dir, 1), inference.CheckFinite())
	require.NoError(t, err)
	h2, err := inference.ONNX(t.Context(), writeDense(t, dir, 2))
	require.NoError(t, err)
	id, id2 := h.Model().ID, h2.Model().ID

	examples := []inference.Example{
		row("a", 0, nd.Of([]float32{1, 2, 3}, 3)),
		row("", 1, nd.Of([]float32{4, 5, 6}, 3)),
		row("b", 2, nd.Of([]float32{1, 2}, 2)),                      // wrong shape
		row("c", 3, nd.Of([]int64{1, 2, 3}, 3)),                     // wrong type
		row("d", 4, nd.Of([]float32{1, float32(math.NaN()), 3}, 3)), // NaN
	}
	p, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, examples)
	res, failed := inference.RunInference(s, col, h, batch.Params{MaxBatchSize: 8}, cpuONNX)
	passert.Equals(s, beam.ParDo(s, describeResult, res),
		fmt.Sprintf("a 0 %s: y=[1 15]", id), fmt.Sprintf(" 1 %s: y=[4 21]", id))
	passert.Equals(s, beam.ParDo(s, failureKey, failed), "b", "c", "d")
	res2, failed2 := inference.RunInference(s.Scope("second"), col, h2, batch.Params{MaxBatchSize: 2}, cpuONNX)
	passert.Count(s, res2, "second model's results", 3) // NaN is not checked here
	passert.Count(s, failed2, "second model's failures", 2)
	passert.Equals(s, beam.ParDo(s, describeResult, beam.ParDo(s, &keepKey{"a"}, res2)), fmt.Sprintf("a 0 %s: y=[2 15]", id2))
	ptest.RunAndValidate(t, p)
}

type keepKey struct{ Key string }

func (k *keepKey) ProcessElement(r inference.Result, emit func(inference.Result)) {
	if r.Key == k.Key {
		emit(r)
	}
}

func init() { register.DoFn2x0[inference.Result, func(inference.Result)]((*keepKey)(nil)) }

// A file that is not a model fails at construction, naming the file.
func TestONNXBadModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.onnx")
	require.NoError(t, os.WriteFile(path, []byte("not a model"), 0o644))
	_, err := inference.ONNX(t.Context(), path)
	assert.ErrorContains(t, err, "bad.onnx")
	m := onnxtest.Model(17, []*onnxpb.NodeProto{onnxtest.Node("NoSuchOp", []string{"x"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 3)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 3)})
	path = filepath.Join(t.TempDir(), "op.onnx")
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(m), 0o644))
	_, err = inference.ONNX(t.Context(), path)
	assert.ErrorContains(t, err, "NoSuchOp")
}

// The stub returns zeros of the model's output shapes.
func TestRunInferenceONNXStub(t *testing.T) {
	h, err := inference.ONNX(t.Context(), writeDense(t, t.TempDir(), 3))
	require.NoError(t, err)
	p, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, []inference.Example{row("a", 0, nd.Of([]float32{1, 2, 3}, 3))})
	res, _ := inference.RunInference(s, col, h, batch.Params{}, step.Using(backend.MustNew(backend.Config{Default: backend.Stub})))
	passert.Equals(s, beam.ParDo(s, describeResult, res), fmt.Sprintf("a 0 %s: y=[0 0]", h.Model().ID))
	ptest.RunAndValidate(t, p)
}

// twice is an operator with a CPU kernel only (registered by this test as
// a user's own operator would be): y = 2x.
type twice struct{}

func (twice) Infer(in []onnx.Meta) ([]onnx.Meta, error) {
	return []onnx.Meta{{Type: in[0].Type, Shape: in[0].Shape}}, nil
}

func (twice) Run(in, out []nd.Array) error {
	y := nd.MustAs[float32](out[0])
	for i, v := range nd.MustAs[float32](in[0]) {
		y[i] = 2 * v
	}
	return nil
}

func init() {
	onnx.RegisterOp(onnx.OpDef{Name: "TestTwiceCPUOnly", Versions: []int{1},
		New: func(n *onnx.Node) (onnx.Kernel, error) { return twice{}, n.CheckArity(1, 1, 1, 1) }})
}

// The explain report has a line per model; under auto a model with
// operators that have no GPU kernel runs on the CPU, the report naming
// them, and under gpu it is an error before the pipeline is built: when
// the selector is made where the pipeline lists the handler's step (with
// its use), else from TryRunInference.
func TestONNXBackend(t *testing.T) {
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{
			onnxtest.Node("Gemm", []string{"x", "w"}, []string{"g"}, onnxtest.Int("transB", 1)),
			onnxtest.Node("TestTwiceCPUOnly", []string{"g"}, []string{"y"}),
		},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 3)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 2)},
		onnxtest.Init("w", nd.Of([]float32{1, 0, 0, 0, 1, 1}, 2, 3)))
	path := filepath.Join(t.TempDir(), "twice.onnx")
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(m), 0o644))
	h, err := inference.ONNX(t.Context(), path)
	require.NoError(t, err)
	use := h.Use()
	assert.Equal(t, "onnx[twice.onnx]", use.Label())
	assert.Equal(t, []string{"TestTwiceCPUOnly"}, h.Model().OpsWithoutGPU(), "Gemm has a GPU kernel")
	assert.Contains(t, use.NoGPU, "TestTwiceCPUOnly")
	assert.Equal(t, use, h.Step().Backend(), "the handler's step carries its use")
	assert.Equal(t, "onnx", h.Step().Name())
	auto := backend.MustNew(backend.Config{Steps: step.Backends(h.Step()), Executor: gpuPresent{}})
	_, s := beam.NewPipelineWithRoot()
	col := beam.Create(s, row("a", 0, nd.Of([]float32{1, 2, 3}, 3)))
	inference.RunInference(s, col, h, batch.Params{}, step.Using(auto))
	var text strings.Builder
	require.NoError(t, auto.Report().WriteText(&text))
	assert.Regexp(t, `onnx\[twice.onnx\]\s+cpu\s+onnx.run.*auto: operators TestTwiceCPUOnly of twice.onnx have no GPU kernel`, text.String())

	_, err = backend.New(backend.Config{Default: backend.GPU, Steps: step.Backends(h.Step()), Executor: gpuPresent{}})
	assert.ErrorContains(t, err, `backend gpu requested for step "onnx[twice.onnx]" but operators TestTwiceCPUOnly of twice.onnx have no GPU kernel`)
	const refused = `backend gpu requested for step "onnx[twice.onnx]" but operators TestTwiceCPUOnly of twice.onnx have no GPU kernel (use --backend=auto to run it on the CPU, or --backend_override=onnx=cpu)`
	gpu := backend.MustNew(backend.Config{Default: backend.GPU, Steps: step.Backends(onnxstep.StepRun), Executor: gpuPresent{}})
	_, _, err = inference.TryRunInference(s, col, h, batch.Params{}, step.Using(gpu))
	assert.EqualError(t, err, refused)
	assert.PanicsWithValue(t, refused, func() { inference.RunInference(s, col, h, batch.Params{}, step.Using(gpu)) })

	// A model whose every operator has a GPU kernel runs there under auto.
	h2, err := inference.ONNX(t.Context(), writeDense(t, t.TempDir(), 4))
	require.NoError(t, err)
	assert.Empty(t, h2.Model().OpsWithoutGPU())
	assert.Empty(t, h2.Use().NoGPU)
}

// Classify after RunInference: the top class of each result, labelled.
func TestClassify(t *testing.T) {
	dir := t.TempDir()
	h, err := inference.ONNX(t.Context(), writeDense(t, dir, 1))
	require.NoError(t, err)
	labels := filepath.Join(dir, "labels.txt")
	require.NoError(t, os.WriteFile(labels, []byte("first\nsecond\n"), 0o644))
	p, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, []inference.Example{row("a", 0, nd.Of([]float32{20, 2, 3}, 3)), row("b", 1, nd.Of([]float32{1, 2, 3}, 3))})
	res, _ := inference.RunInference(s, col, h, batch.Params{}, cpuONNX)
	classes, failed, err := inference.Classify(t.Context(), s, res, "y", 1, labels)
	require.NoError(t, err)
	passert.Equals(s, beam.ParDo(s, describeClass, classes), "a first 20", "b second 15")
	passert.Empty(s, failed)
	bad, failed2, _ := inference.Classify(t.Context(), s.Scope("bad"), res, "nope", 1, "")
	passert.Empty(s, bad)
	passert.Count(s, failed2, "failures", 2)
	ptest.RunAndValidate(t, p)
}

func describeClass(c inference.Classification) string {
	return fmt.Sprintf("%s %s %g", c.Key, c.Top[0].Label, c.Top[0].Score)
}

func init() { register.Function1x1(describeClass) }

func describeTypes(r inference.Result) string {
	s := r.ID()
	for _, o := range r.Outputs {
		s += fmt.Sprintf(" %s=%v", o.Name, o.Array)
	}
	return s
}

func init() { register.Function1x1(describeTypes) }

// Inputs of several types, in any order, through a batched model with two
// inputs and a model without a batch axis (each example alone).
func TestRunInferenceONNXTypes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, m *onnxpb.ModelProto) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, onnxtest.Bytes(m), 0o644))
		return path
	}
	two := write("two.onnx", onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Identity", []string{"i"}, []string{"io"}), onnxtest.Node("Identity", []string{"m"}, []string{"mo"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("i", nd.Int64, -1, 2), onnxtest.Value("m", nd.Bool, -1, 2)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("io", nd.Int64, -1, 2), onnxtest.Value("mo", nd.Bool, -1, 2)}))
	fixed := write("fixed.onnx", onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Identity", []string{"u"}, []string{"uo"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("u", nd.Uint8, 3)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("uo", nd.Uint8, 3)}))
	h2, err := inference.ONNX(t.Context(), two)
	require.NoError(t, err)
	hf, err := inference.ONNX(t.Context(), fixed)
	require.NoError(t, err)
	assert.True(t, h2.Model().Batched())
	assert.False(t, hf.Model().Batched())

	p, s := beam.NewPipelineWithRoot()
	ex := func(key string, i []int64, m []bool) inference.Example {
		return inference.Example{Key: key, Inputs: []inference.Tensor{{Name: "m", Array: nd.Of(m, 2)}, {Name: "i", Array: nd.Of(i, 2)}}}
	}
	col := beam.CreateList(s, []inference.Example{ex("a", []int64{1, 2}, []bool{true, false}), ex("b", []int64{3, 4}, []bool{false, true})})
	res, failed := inference.RunInference(s, col, h2, batch.Params{MinBatchSize: 2, MaxBatchSize: 2}, cpuONNX)
	passert.Equals(s, beam.ParDo(s, describeTypes, res), "a io=int64[2] mo=bool[2]", "b io=int64[2] mo=bool[2]")
	passert.Empty(s, failed)
	ucol := beam.CreateList(s, []inference.Example{
		{Index: 0, Inputs: []inference.Tensor{{Name: "u", Array: nd.Of([]uint8{1, 2, 3}, 3)}}},
		{Index: 1, Inputs: []inference.Tensor{{Name: "u", Array: nd.Of([]uint8{4, 5, 6}, 3)}}},
		{Index: 2, Inputs: []inference.Tensor{{Name: "v", Array: nd.Of([]uint8{4, 5, 6}, 3)}}},
	})
	ures, ufailed := inference.RunInference(s.Scope("fixed"), ucol, hf, batch.Params{}, cpuONNX)
	passert.Equals(s, beam.ParDo(s, describeTypes, ures), "#0 uo=uint8[3]", "#1 uo=uint8[3]")
	passert.Equals(s, beam.ParDo(s, failureKey, ufailed), "#2")
	ptest.RunAndValidate(t, p)
}

// writeGather writes a model y = table[x] (Gather of a float32 table of
// 10 values, i*10, at int64 indices x[N, 2]), which fails on an index
// outside the table, and returns its path.
func writeGather(t *testing.T, dir string) string {
	table := make([]float32, 10)
	for i := range table {
		table[i] = float32(i * 10)
	}
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Gather", []string{"table", "x"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Int64, -1, 2)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 2)},
		onnxtest.Init("table", nd.Of(table, 10)))
	path := filepath.Join(dir, "gather.onnx")
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(m), 0o644))
	return path
}

// failureReason writes a failure as "input: reason".
func failureReason(f step.Failure) string { return f.Input + ": " + f.Reason }

func init() { register.Function1x1(failureReason) }

// A call of the model that fails on one example of its batch (a Gather
// index out of range in one row of 16) is retried in halves: exactly that
// example fails, with the model's error about its own index, and the
// other 15 get their results.
func TestRunInferenceFailedCallFailsOnlyItsBadRows(t *testing.T) {
	h, err := inference.ONNX(t.Context(), writeGather(t, t.TempDir()))
	require.NoError(t, err)
	const n, bad = 16, 11
	var examples []inference.Example
	var want []string
	for i := range int64(n) {
		x := []int64{i % 10, (i + 1) % 10}
		if i == bad {
			x[1] = 99
		} else {
			want = append(want, fmt.Sprintf("k%d %d %s: y=[%d %d]", i, i, h.Model().ID, x[0]*10, x[1]*10))
		}
		examples = append(examples, row(fmt.Sprintf("k%d", i), i, nd.Of(x, 2)))
	}
	p, s := beam.NewPipelineWithRoot()
	res, failed := inference.RunInference(s, beam.CreateList(s, examples), h, batch.Params{MinBatchSize: n, MaxBatchSize: n}, cpuONNX)
	passert.Equals(s, beam.ParDo(s, describeResult, res), toAny(want)...)
	passert.Equals(s, beam.ParDo(s, failureReason, failed),
		`k11: gather.onnx: node "Gather_[y]" (Gather, opset 17): index 99 (element 1 of indices) is out of range for axis 0 of size 10`)
	ptest.RunAndValidate(t, p)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
