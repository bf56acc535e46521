package onnx_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flowConformance runs ONNX's node tests named, on the CPU (Model.Run).
func flowConformance(t *testing.T, names ...string) {
	root := onnxtest.Dir()
	if _, err := os.Stat(filepath.Join(root, "node")); err != nil {
		t.Skipf("ONNX conformance data not found at %s", root)
	}
	for _, name := range names {
		c := onnxtest.Conformance{Suite: "node", Name: name, Dir: filepath.Join(root, "node", name)}
		assert.NoError(t, onnxtest.RunConformance(t, c, func(m *onnx.Model, in []nd.Array) ([]nd.Array, error) { return m.Run(in) }), name)
	}
}

func TestControlFlowConformance(t *testing.T) {
	flowConformance(t, "test_if", "test_scan_sum", "test_scan9_sum")
}

// ifModel is y = If(c) then x + 1 else -x: both branches read x, a value of
// the main graph, and the then branch a constant of its own.
func ifModel(opset int, cond ...onnxtest.Named) *onnxpb.ModelProto {
	inputs := values{onnxtest.Value("x", nd.Float32, 3)}
	if len(cond) == 0 {
		inputs = append(inputs, onnxtest.Value("c", nd.Bool))
	}
	then := onnxtest.Graph("then_branch", nodes{onnxtest.Node("Add", []string{"x", "one"}, []string{"t"})},
		nil, values{onnxtest.ValueNoShape("t", nd.Float32)}, onnxtest.Init("one", nd.Of([]float32{1})))
	otherwise := onnxtest.Graph("else_branch", nodes{onnxtest.Node("Neg", []string{"x"}, []string{"e"})},
		nil, values{onnxtest.ValueNoShape("e", nd.Float32)})
	return onnxtest.Model(opset, nodes{onnxtest.Node("If", []string{"c"}, []string{"y"}, then, otherwise)},
		inputs, values{onnxtest.Value("y", nd.Float32, 3)}, cond...)
}

func TestIfReadsOuterScope(t *testing.T) {
	m, err := onnxtest.Load(ifModel(13))
	require.NoError(t, err)
	x := nd.Of([]float32{1, -2, 3}, 3)
	for _, c := range []bool{true, false} {
		out, err := m.Run([]nd.Array{x, nd.Scalar(c)})
		require.NoError(t, err)
		want := []float32{2, -1, 4}
		if !c {
			want = []float32{-1, 2, -3}
		}
		assert.Equal(t, want, nd.MustAs[float32](out[0]), "cond %v", c)
	}
}

// A condition known at load picks its branch when planning: the plan runs
// the branch alone.
func TestIfKnownCondition(t *testing.T) {
	m, err := onnxtest.Load(ifModel(11, onnxtest.Init("c", nd.Scalar(false))))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of([]float32{1, -2, 3}, 3)})
	require.NoError(t, err)
	assert.Equal(t, []float32{-1, 2, -3}, nd.MustAs[float32](out[0]))
}

func TestSubgraphUndefinedValue(t *testing.T) {
	then := onnxtest.Graph("then_branch", nodes{onnxtest.Node("Add", []string{"x", "nowhere"}, []string{"t"})},
		nil, values{onnxtest.ValueNoShape("t", nd.Float32)})
	otherwise := onnxtest.Graph("else_branch", nodes{onnxtest.Node("Neg", []string{"x"}, []string{"e"})},
		nil, values{onnxtest.ValueNoShape("e", nd.Float32)})
	iff := onnxtest.Node("If", []string{"c"}, []string{"y"}, then, otherwise)
	_, err := onnxtest.Load(onnxtest.Model(13, nodes{iff},
		values{onnxtest.Value("x", nd.Float32, 3), onnxtest.Value("c", nd.Bool)}, values{onnxtest.Value("y", nd.Float32, 3)}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `node "If_[y]" (If, opset 13)`)
	assert.Contains(t, err.Error(), `attribute then_branch`)
	assert.Contains(t, err.Error(), `input "nowhere" is not defined`)
}

// The operators a model lacks are named from its subgraphs too.
func TestSubgraphUnsupportedOperator(t *testing.T) {
	then := onnxtest.Graph("then_branch", nodes{onnxtest.Node("NoSuchOp", []string{"x"}, []string{"t"})},
		nil, values{onnxtest.ValueNoShape("t", nd.Float32)})
	otherwise := onnxtest.Graph("else_branch", nodes{onnxtest.Node("Neg", []string{"x"}, []string{"e"})},
		nil, values{onnxtest.ValueNoShape("e", nd.Float32)})
	_, err := onnxtest.Load(onnxtest.Model(13, nodes{onnxtest.Node("If", []string{"c"}, []string{"y"}, then, otherwise)},
		values{onnxtest.Value("x", nd.Float32, 3), onnxtest.Value("c", nd.Bool)}, values{onnxtest.Value("y", nd.Float32, 3)}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `NoSuchOp (node "NoSuchOp_[t]" in node "If_[y]"'s then_branch, opset 13)`)
}

// loopModel: a Loop of trip count m (an initializer) whose body adds x (a
// value of the main graph) to its carried sum, and gives the sum of each
// iteration as a scan output; an If inside the body reads x as well (a
// nested subgraph reading the outermost graph): it adds x again on odd
// iterations.
func loopModel(trips int64) *onnxpb.ModelProto {
	then := onnxtest.Graph("then_branch", nodes{onnxtest.Node("Add", []string{"s1", "x"}, []string{"t"})},
		nil, values{onnxtest.ValueNoShape("t", nd.Float32)})
	otherwise := onnxtest.Graph("else_branch", nodes{onnxtest.Node("Identity", []string{"s1"}, []string{"e"})},
		nil, values{onnxtest.ValueNoShape("e", nd.Float32)})
	body := onnxtest.Graph("body", nodes{
		onnxtest.Node("Identity", []string{"cond_in"}, []string{"cond_out"}),
		onnxtest.Node("Add", []string{"s_in", "x"}, []string{"s1"}),
		onnxtest.Node("Mod", []string{"i", "two"}, []string{"odd_i"}),
		onnxtest.Node("Cast", []string{"odd_i"}, []string{"odd"}, onnxtest.Int("to", int64(nd.Bool))),
		onnxtest.Node("If", []string{"odd"}, []string{"s_out"}, then, otherwise),
		onnxtest.Node("Identity", []string{"s_out"}, []string{"scan"}),
	}, values{onnxtest.Value("i", nd.Int64), onnxtest.Value("cond_in", nd.Bool), onnxtest.ValueNoShape("s_in", nd.Float32)},
		values{onnxtest.Value("cond_out", nd.Bool), onnxtest.ValueNoShape("s_out", nd.Float32), onnxtest.ValueNoShape("scan", nd.Float32)},
		onnxtest.Init("two", nd.Scalar(int64(2))))
	return onnxtest.Model(13, nodes{onnxtest.Node("Loop", []string{"m", "", "s0"}, []string{"s", "all"}, body)},
		values{onnxtest.Value("x", nd.Float32, 2), onnxtest.Value("s0", nd.Float32, 2)},
		values{onnxtest.Value("s", nd.Float32, 2), onnxtest.ValueNoShape("all", nd.Float32)},
		onnxtest.Init("m", nd.Scalar(trips)))
}

func TestLoopNestedOuterScope(t *testing.T) {
	m, err := onnxtest.Load(loopModel(4))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of([]float32{1, 10}, 2), nd.Of([]float32{0, 0}, 2)})
	require.NoError(t, err)
	// iterations 0..3 add x, and x again on 1 and 3: 1, 3, 4, 6 times x
	assert.Equal(t, []float32{6, 60}, nd.MustAs[float32](out[0]))
	assert.Equal(t, []int{4, 2}, out[1].Shape)
	assert.Equal(t, []float32{1, 10, 3, 30, 4, 40, 6, 60}, nd.MustAs[float32](out[1]))
}

// A trip count of 0 or less runs no iteration (the definition's
// "i < M"): the carried values come back as given, the scan outputs
// empty.
func TestLoopNoIteration(t *testing.T) {
	for _, trips := range []int64{0, -5} {
		m, err := onnxtest.Load(loopModel(trips))
		require.NoError(t, err)
		out, err := m.Run([]nd.Array{nd.Of([]float32{1, 10}, 2), nd.Of([]float32{7, 8}, 2)})
		require.NoError(t, err, "trip count %d", trips)
		assert.Equal(t, []float32{7, 8}, nd.MustAs[float32](out[0]), "trip count %d", trips)
		assert.Equal(t, []int{0, 2}, out[1].Shape, "trip count %d", trips)
	}
}

func TestLoopBodyArity(t *testing.T) {
	body := onnxtest.Graph("body", nodes{onnxtest.Node("Identity", []string{"cond_in"}, []string{"cond_out"})},
		values{onnxtest.Value("i", nd.Int64), onnxtest.Value("cond_in", nd.Bool)}, values{onnxtest.Value("cond_out", nd.Bool)})
	_, err := onnxtest.Load(onnxtest.Model(13, nodes{onnxtest.Node("Loop", []string{"m", "", "s0"}, []string{"s"}, body)},
		values{onnxtest.Value("s0", nd.Float32, 2)}, values{onnxtest.Value("s", nd.Float32, 2)}, onnxtest.Init("m", nd.Scalar(int64(2)))))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `node "Loop_[s]" (Loop, opset 13): attribute body: the body declares 2 inputs, want 3`)
}

// scanModel scans x (3x2) along axis 1 backward, summing into a state and
// giving each partial sum, stacked along axis 0 backward.
func TestScanAxesDirections(t *testing.T) {
	body := onnxtest.Graph("body", nodes{
		onnxtest.Node("Add", []string{"s_in", "col"}, []string{"s_out"}),
		onnxtest.Node("Mul", []string{"s_out", "k"}, []string{"scan"}),
	}, values{onnxtest.ValueNoShape("s_in", nd.Float32), onnxtest.ValueNoShape("col", nd.Float32)},
		values{onnxtest.ValueNoShape("s_out", nd.Float32), onnxtest.ValueNoShape("scan", nd.Float32)})
	scan := onnxtest.Node("Scan", []string{"s0", "x"}, []string{"s", "y"}, body,
		onnxtest.Int("num_scan_inputs", 1), onnxtest.Ints("scan_input_axes", 1), onnxtest.Ints("scan_input_directions", 1),
		onnxtest.Ints("scan_output_axes", 1), onnxtest.Ints("scan_output_directions", 1))
	m, err := onnxtest.Load(onnxtest.Model(16, nodes{scan},
		values{onnxtest.Value("s0", nd.Float32, 3), onnxtest.Value("x", nd.Float32, 3, 2), onnxtest.Value("k", nd.Float32)},
		values{onnxtest.Value("s", nd.Float32, 3), onnxtest.Value("y", nd.Float32, 3, 2)}))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of([]float32{0, 0, 0}, 3), nd.Of([]float32{1, 2, 3, 4, 5, 6}, 3, 2), nd.Scalar(float32(10))})
	require.NoError(t, err)
	// backward over the columns: the first sum is of column 1 (2, 4, 6),
	// then of both (3, 7, 11); written backward along y's axis 1
	assert.Equal(t, []float32{3, 7, 11}, nd.MustAs[float32](out[0]))
	assert.Equal(t, []float32{30, 20, 70, 40, 110, 60}, nd.MustAs[float32](out[1]))
}

// A Scan along axis 0, an RNN's form (h = tanh(h W + x_t), each h a scan
// output; a second state counts the steps; x read backward, the outputs
// written forward), equals the loop written out, and its iterations
// allocate nothing each: the body is planned once and run into buffers
// of its own (64 steps, under 64 allocations a run).
func TestScanPlansItsBodyOnce(t *testing.T) {
	const steps, batch, hidden = 64, 3, 5
	body := onnxtest.Graph("body", nodes{
		onnxtest.Node("MatMul", []string{"h_in", "w"}, []string{"hw"}),
		onnxtest.Node("Add", []string{"hw", "x_t"}, []string{"pre"}),
		onnxtest.Node("Tanh", []string{"pre"}, []string{"h_out"}),
		onnxtest.Node("Add", []string{"n_in", "one"}, []string{"n_out"}),
		onnxtest.Node("Identity", []string{"h_out"}, []string{"y_t"}),
	}, values{onnxtest.ValueNoShape("h_in", nd.Float32), onnxtest.ValueNoShape("n_in", nd.Float32), onnxtest.ValueNoShape("x_t", nd.Float32)},
		values{onnxtest.ValueNoShape("h_out", nd.Float32), onnxtest.ValueNoShape("n_out", nd.Float32), onnxtest.ValueNoShape("y_t", nd.Float32)})
	scan := onnxtest.Node("Scan", []string{"h0", "n0", "x"}, []string{"h", "n", "y"}, body,
		onnxtest.Int("num_scan_inputs", 1), onnxtest.Ints("scan_input_directions", 1))
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, hidden*hidden)
	for i := range w {
		w[i] = float32(r.NormFloat64()) / 2
	}
	m, err := onnxtest.Load(onnxtest.Model(16, nodes{scan},
		values{onnxtest.Value("h0", nd.Float32, batch, hidden), onnxtest.Value("n0", nd.Float32), onnxtest.Value("x", nd.Float32, steps, batch, hidden)},
		values{onnxtest.Value("h", nd.Float32, batch, hidden), onnxtest.Value("n", nd.Float32), onnxtest.Value("y", nd.Float32, steps, batch, hidden)},
		onnxtest.Init("w", nd.Of(w, hidden, hidden)), onnxtest.Init("one", nd.Scalar(float32(1)))))
	require.NoError(t, err)
	// The main graph's initializers w and one are constants of the body,
	// not inputs read at each iteration (w packed for MatMul once).
	assert.Equal(t, map[string][]string{"h/body": {"h_in", "n_in", "x_t"}}, onnx.SubgraphInputs(m))
	h0, x := make([]float32, batch*hidden), make([]float32, steps*batch*hidden)
	for i := range h0 {
		h0[i] = float32(r.NormFloat64())
	}
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	in := []nd.Array{nd.Of(h0, batch, hidden), nd.Scalar(float32(0)), nd.Of(x, steps, batch, hidden)}
	out, err := m.Run(in)
	require.NoError(t, err)
	h := slices.Clone(h0)
	y := nd.MustAs[float32](out[2])
	for t2 := range steps {
		xt := x[(steps-1-t2)*batch*hidden:]
		next := make([]float32, len(h))
		for b := range batch {
			for j := range hidden {
				var sum float64
				for k := range hidden {
					sum += float64(h[b*hidden+k]) * float64(w[k*hidden+j])
				}
				next[b*hidden+j] = float32(math.Tanh(sum + float64(xt[b*hidden+j])))
			}
		}
		h = next
		assert.InDeltaSlice(t, h, y[t2*batch*hidden:(t2+1)*batch*hidden], 1e-5, "step %d", t2)
	}
	assert.InDeltaSlice(t, h, nd.MustAs[float32](out[0]), 1e-5)
	assert.Equal(t, []float32{steps}, nd.MustAs[float32](out[1]))
	p, err := m.Plan(in)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(5, func() { _, _ = p.Run(in) })
	assert.Less(t, allocs, float64(steps), "a Scan's iterations allocate nothing each")
}

// TestControlFlowModels holds the models of testdata/flow to ONNX
// Runtime's outputs, on the CPU and on the emulated device (where the
// control flow runs on the host, its subgraphs' plans on the CPU):
// PyTorch's export of TorchScript modules (containers/onnx/export_flow_cases.py),
// one with a Loop, an If inside it and an If after it, at opsets 11 and
// 16, one whose loop appends to a list that it then stacks and
// concatenates (a sequence, held as the Loop's scan output), and one that
// loops over torch.unbind's slices and adds torch.split's first and last
// chunks (SplitToSequence, SequenceLength, SequenceAt).
func TestControlFlowModels(t *testing.T) {
	dev := emulator(t)
	dirs, err := filepath.Glob(filepath.Join("testdata", "flow", "*", "model.onnx"))
	require.NoError(t, err)
	require.Len(t, dirs, 4)
	for _, model := range dirs {
		dir := filepath.Dir(model)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, err := onnxtest.LoadFile(model)
			require.NoError(t, err)
			assert.Contains(t, m.OpsUsed(), "Loop")
			var outs []nd.Array
			for s := range 2 {
				set := filepath.Join(dir, fmt.Sprintf("test_data_set_%d", s))
				in := []nd.Array{onnxtest.ReadTensor(t, filepath.Join(set, "input_0.pb"))}
				files, err := filepath.Glob(filepath.Join(set, "output_*.pb"))
				require.NoError(t, err)
				sort.Strings(files)
				require.Len(t, files, len(m.Outputs))
				got, err := m.Run(in)
				require.NoError(t, err)
				dgot, onHost, err := runOnDevice(dev, m, in)
				require.NoError(t, err)
				for _, n := range onHost {
					assert.Regexp(t, `^(If|Loop|ConcatFromSequence|SplitToSequence|SequenceAt|SequenceLength) `, n, "only the control flow runs on the host")
				}
				for i, f := range files {
					want := onnxtest.ReadTensor(t, f)
					assert.NoError(t, compareOutput(got[i], want, t.Logf), "set %d output %d on the CPU", s, i)
					assert.NoError(t, compareOutput(dgot[i], want, nil), "set %d output %d on the device", s, i)
				}
				outs = append(outs, got[0])
			}
			if m.Outputs[0].Name == "y" && len(outs[0].Shape) == 2 {
				// the two sets take the two branches of the last If
				assert.NotEqual(t, nd.MustAs[float32](outs[0]), nd.MustAs[float32](outs[1]))
			}
		})
	}
}

// sequenceValue declares a sequence of float32 tensors.
func sequenceValue(name string) *onnxpb.ValueInfoProto {
	v := onnxtest.ValueNoShape(name, nd.Float32)
	v.Type = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{ElemType: v.Type}}}
	return v
}

// listModel: a Loop of trip count 3 appends x * (i + 1) to a list (at its
// front where front is set), which the graph reads by SequenceAt (position
// -1), SequenceLength, and, where seqOut is set, as one of the model's
// outputs (a sequence).
func listModel(seqOut, front bool) *onnxpb.ModelProto {
	insert := onnxtest.Node("SequenceInsert", []string{"s_in", "t"}, []string{"s_out"})
	if front {
		insert = onnxtest.Node("SequenceInsert", []string{"s_in", "t", "zero"}, []string{"s_out"})
	}
	body := onnxtest.Graph("body", nodes{
		onnxtest.Node("Identity", []string{"cond_in"}, []string{"cond_out"}),
		onnxtest.Node("Add", []string{"i", "one"}, []string{"i1"}),
		onnxtest.Node("Cast", []string{"i1"}, []string{"f"}, onnxtest.Int("to", int64(nd.Float32))),
		onnxtest.Node("Mul", []string{"x", "f"}, []string{"t"}),
		insert,
	}, values{onnxtest.Value("i", nd.Int64), onnxtest.Value("cond_in", nd.Bool), sequenceValue("s_in")},
		values{onnxtest.Value("cond_out", nd.Bool), sequenceValue("s_out")},
		onnxtest.Init("one", nd.Scalar(int64(1))), onnxtest.Init("zero", nd.Scalar(int64(0))))
	ns := nodes{
		onnxtest.Node("SequenceEmpty", nil, []string{"s0"}),
		onnxtest.Node("Loop", []string{"m", "", "s0"}, []string{"s"}, body),
		onnxtest.Node("SequenceAt", []string{"s", "at"}, []string{"last"}),
		onnxtest.Node("SequenceLength", []string{"s"}, []string{"n"}),
	}
	outputs := values{onnxtest.ValueNoShape("last", nd.Float32), onnxtest.Value("n", nd.Int64)}
	if seqOut {
		outputs = append(outputs, sequenceValue("s"))
	}
	return onnxtest.Model(13, ns, values{onnxtest.Value("x", nd.Float32, 2)}, outputs,
		onnxtest.Init("m", nd.Scalar(int64(3))), onnxtest.Init("at", nd.Scalar(int64(-1))))
}

// A list appended to at its back is the Loop's scan output (sequence.go);
// one inserted into at its front is a sequence carried by the Loop, which
// grows each iteration (a Loop whose outputs' shapes come from the data).
// Both give the list the definition gives.
func TestLoopList(t *testing.T) {
	for _, c := range []struct {
		front bool
		want  []float32
	}{{false, []float32{3, 30}}, {true, []float32{1, 10}}} {
		m, err := onnxtest.Load(listModel(false, c.front))
		require.NoError(t, err)
		out, err := m.Run([]nd.Array{nd.Of([]float32{1, 10}, 2)})
		require.NoError(t, err)
		assert.Equal(t, c.want, nd.MustAs[float32](out[0]), "front %v: the list's last element", c.front)
		assert.Equal(t, []int64{3}, nd.MustAs[int64](out[1]))
	}
}

// A sequence as a model's output is refused at load: the runtime gives
// tensors.
func TestSequenceOutputRefused(t *testing.T) {
	_, err := onnxtest.Load(listModel(true, false))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `output "s" is not a tensor`)
}

// Scan version 8: a batch axis first on every input and output, the
// sequence_lens input (full lengths only), directions.
func TestScan8Batch(t *testing.T) {
	body := onnxtest.Graph("body", nodes{
		onnxtest.Node("Add", []string{"s_in", "x_t"}, []string{"s_out"}),
		onnxtest.Node("Identity", []string{"s_out"}, []string{"y_t"}),
	}, values{onnxtest.ValueNoShape("s_in", nd.Float32), onnxtest.ValueNoShape("x_t", nd.Float32)},
		values{onnxtest.ValueNoShape("s_out", nd.Float32), onnxtest.ValueNoShape("y_t", nd.Float32)})
	scan := onnxtest.Node("Scan", []string{"lens", "s0", "x"}, []string{"s", "y"}, body,
		onnxtest.Int("num_scan_inputs", 1), onnxtest.Ints("directions", 1))
	m, err := onnxtest.Load(onnxtest.Model(8, nodes{scan},
		values{onnxtest.Value("lens", nd.Int32, 2), onnxtest.Value("s0", nd.Float32, 2, 1), onnxtest.Value("x", nd.Float32, 2, 3, 1)},
		values{onnxtest.Value("s", nd.Float32, 2, 1), onnxtest.Value("y", nd.Float32, 2, 3, 1)}))
	require.NoError(t, err)
	s0 := nd.Of([]float32{100, 200}, 2, 1)
	x := nd.Of([]float32{1, 2, 3, 4, 5, 6}, 2, 3, 1)
	out, err := m.Run([]nd.Array{nd.Of([]int32{3, 3}, 2), s0, x})
	require.NoError(t, err)
	// the input read backward: batch 0 adds 3, then 2, then 1; version 8's
	// scan outputs are in the iterations' order
	assert.Equal(t, []float32{106, 215}, nd.MustAs[float32](out[0]))
	assert.Equal(t, []float32{103, 105, 106, 206, 211, 215}, nd.MustAs[float32](out[1]))
	_, err = m.Run([]nd.Array{nd.Of([]int32{3, 2}, 2), s0, x})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sequence_lens[1] is 2: the runtime takes only full sequences (3)")
}

// BenchmarkControlFlowModels runs the models of testdata/flow at batch 64
// (their first input's rows repeated) and reports the median time of a
// batch, to set beside ONNX Runtime's on the same files
// (containers/onnx/ort.sh -- containers/onnx/ort_run.js bench --threads 1
// --batch 64 MODEL INPUT).
func BenchmarkControlFlowModels(b *testing.B) {
	const batch = 64
	dirs, err := filepath.Glob(filepath.Join("testdata", "flow", "*", "model.onnx"))
	require.NoError(b, err)
	for _, model := range dirs {
		dir := filepath.Dir(model)
		b.Run(filepath.Base(dir), func(b *testing.B) {
			m, err := onnxtest.LoadFile(model)
			require.NoError(b, err)
			in := []nd.Array{repeatRows(onnxtest.ReadTensor(b, filepath.Join(dir, "test_data_set_0", "input_0.pb")), batch)}
			_, err = m.Run(in) // the plans made
			require.NoError(b, err)
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := m.Run(in); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "ms/batch")
		})
	}
}

// A branch may read a value that a node listed after the If makes: the If
// reads it too, so the graph's order puts that node first.
func TestIfReadsValueMadeLater(t *testing.T) {
	then := onnxtest.Graph("then_branch", nodes{onnxtest.Node("Identity", []string{"z"}, []string{"t"})},
		nil, values{onnxtest.ValueNoShape("t", nd.Float32)})
	otherwise := onnxtest.Graph("else_branch", nodes{onnxtest.Node("Identity", []string{"x"}, []string{"e"})},
		nil, values{onnxtest.ValueNoShape("e", nd.Float32)})
	m, err := onnxtest.Load(onnxtest.Model(13, nodes{
		onnxtest.Node("If", []string{"c"}, []string{"y"}, then, otherwise),
		onnxtest.Node("Neg", []string{"x"}, []string{"z"}),
	}, values{onnxtest.Value("x", nd.Float32, 2), onnxtest.Value("c", nd.Bool)}, values{onnxtest.Value("y", nd.Float32, 2)}))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of([]float32{1, -2}, 2), nd.Scalar(true)})
	require.NoError(t, err)
	assert.Equal(t, []float32{-1, 2}, nd.MustAs[float32](out[0]))
}

// A model with control flow is safe for concurrent use, as every model:
// its subgraphs' plans are shared, each run's state its own.
func TestControlFlowConcurrent(t *testing.T) {
	m, err := onnxtest.LoadFile(filepath.Join("testdata", "flow", "torch_if_loop_opset16", "model.onnx"))
	require.NoError(t, err)
	ins := []nd.Array{nd.Of([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 1, 8), nd.Of([]float32{-1, -2, -3, -4, -5, -6, -7, -8}, 1, 8)}
	want := make([][]float32, len(ins))
	for i, in := range ins {
		out, err := m.Run([]nd.Array{in})
		require.NoError(t, err)
		want[i] = nd.MustAs[float32](out[0])
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for r := range 20 {
				i := (g + r) % len(ins)
				out, err := m.Run([]nd.Array{ins[i]})
				if err == nil && !slices.Equal(nd.MustAs[float32](out[0]), want[i]) {
					err = fmt.Errorf("goroutine %d run %d: %v, want %v", g, r, out[0], want[i])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		assert.NoError(t, <-errs)
	}
}

// A Loop's body declares its iteration int64 and its condition bool: one
// that declares another type is refused at load, naming the node.
func TestLoopBodyTypes(t *testing.T) {
	body := onnxtest.Graph("body", nodes{onnxtest.Node("Identity", []string{"cond_in"}, []string{"cond_out"})},
		values{onnxtest.Value("i", nd.Float32), onnxtest.Value("cond_in", nd.Bool)}, values{onnxtest.Value("cond_out", nd.Bool)})
	_, err := onnxtest.Load(onnxtest.Model(13, nodes{onnxtest.Node("Loop", []string{"m", ""}, []string{}, body)},
		nil, values{onnxtest.Value("m", nd.Int64)}, onnxtest.Init("m", nd.Scalar(int64(2)))))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `(Loop, opset 13): attribute body: its input 0 ("i") is declared float32, want int64 (the iteration)`)
}

// Subgraphs nest at most 64 deep: a model file that nests more is refused
// at load.
func TestSubgraphDepth(t *testing.T) {
	nest := func(depth int) *onnxpb.ModelProto {
		inner := nodes{onnxtest.Node("Identity", []string{"x"}, []string{"y0"})}
		for d := 1; d <= depth; d++ {
			out := fmt.Sprintf("y%d", d)
			in := fmt.Sprintf("y%d", d-1)
			then := onnxtest.Graph("then_branch", inner, nil, values{onnxtest.ValueNoShape(in, nd.Float32)})
			e := fmt.Sprintf("e%d", d)
			otherwise := onnxtest.Graph("else_branch", nodes{onnxtest.Node("Neg", []string{"x"}, []string{e})}, nil, values{onnxtest.ValueNoShape(e, nd.Float32)})
			inner = nodes{onnxtest.Node("If", []string{"c"}, []string{out}, then, otherwise)}
		}
		return onnxtest.Model(13, inner, values{onnxtest.Value("x", nd.Float32, 1), onnxtest.Value("c", nd.Bool)},
			values{onnxtest.ValueNoShape(fmt.Sprintf("y%d", depth), nd.Float32)})
	}
	m, err := onnxtest.Load(nest(8))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of([]float32{7}, 1), nd.Scalar(true)})
	require.NoError(t, err)
	assert.Equal(t, []float32{7}, nd.MustAs[float32](out[0]))
	_, err = onnxtest.Load(nest(70))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "subgraphs nest more than 64 deep")
}
