package onnxtest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// ONNX's backend conformance suite: the node tests (one operator, a few
// inputs, outputs computed by ONNX's reference implementation) and the
// models converted from PyTorch's own tests, as Debian's libonnx-testdata
// ships them (apt-get install libonnx-testdata; `make test` fetches the
// package's files without root, containers/debian-fetch.sh, and sets
// BEAMGPU_ONNX_TESTDATA). Every test whose operators are all in the runtime's
// op set must pass, but for the skips below, each with its reason.

// Dir is where libonnx-testdata puts the suite
// ($BEAMGPU_ONNX_TESTDATA overrides).
func Dir() string {
	if d := os.Getenv("BEAMGPU_ONNX_TESTDATA"); d != "" {
		return d
	}
	return "/usr/share/libonnx-testdata/data"
}

// Suites are the suite's directories this runtime is held to.
var Suites = []string{"node", "pytorch-converted", "pytorch-operator", "simple"}

// Skips are the conformance tests of the op set that are not run, and why.
var Skips = map[string]string{
	"node/test_cast_FLOAT_to_STRING":                "string tensors are not supported",
	"node/test_cast_STRING_to_FLOAT":                "string tensors are not supported",
	"node/test_castlike_FLOAT_to_STRING_expanded":   "string tensors are not supported",
	"node/test_castlike_STRING_to_FLOAT_expanded":   "string tensors are not supported",
	"node/test_cast_FLOAT_to_BFLOAT16":              "the data (ONNX 1.12) truncates float32 to bfloat16; ONNX since 1.14 and this runtime round to nearest even",
	"node/test_castlike_FLOAT_to_BFLOAT16_expanded": "the data (ONNX 1.12) truncates float32 to bfloat16, and the model declares like 3x4 for data of 1 element",
	"node/test_castlike_BFLOAT16_to_FLOAT_expanded": "the model (ONNX 1.12) declares input like 3x4, its data has 1 element",
	"node/test_einsum_batch_diagonal":               "Einsum with an ellipsis and a diagonal (\"...ii->...i\") is refused at load: the runtime takes the forms exporters emit, one letter per axis",
	"node/test_identity_opt":                        "optional types are not supported (tensors only)",
	"node/test_identity_sequence":                   "sequence types are not supported (tensors only)",
	"node/test_dropout_random_old":                  "dropout in training mode: the mask is random (ONNX Runtime skips it too)",
	"node/test_training_dropout":                    "dropout in training mode: the mask is random",
	"node/test_training_dropout_default":            "dropout in training mode: the mask is random",
	"node/test_training_dropout_default_mask":       "dropout in training mode: the mask is random",
	"node/test_training_dropout_mask":               "dropout in training mode: the mask is random",
	// The runtime holds a sequence as its elements stacked (a tensor), so
	// a sequence's elements must be of one shape, and a model's inputs and
	// outputs are tensors: it takes and gives no sequence.
	"simple/test_sequence_model1":                                  "a sequence whose elements differ in shape (2x3x4 and 1x3x4): the runtime holds a sequence of one shape",
	"node/test_if_seq":                                             "a sequence as the model's output: the runtime gives tensors",
	"node/test_loop13_seq":                                         "a sequence as the model's input and output: the runtime takes and gives tensors",
	"node/test_sequence_insert_at_back":                            "a sequence as the model's input and output: the runtime takes and gives tensors",
	"node/test_sequence_insert_at_front":                           "a sequence as the model's input and output: the runtime takes and gives tensors",
	"node/test_sequence_map_add_1_sequence_1_tensor_expanded":      "sequences as the model's input and output: the runtime takes and gives tensors",
	"node/test_sequence_map_add_2_sequences_expanded":              "sequences as the model's input and output: the runtime takes and gives tensors",
	"node/test_sequence_map_extract_shapes_expanded":               "sequences as the model's input and output: the runtime takes and gives tensors",
	"node/test_sequence_map_identity_1_sequence_1_tensor_expanded": "sequences as the model's input and output: the runtime takes and gives tensors",
	"node/test_sequence_map_identity_1_sequence_expanded":          "sequences as the model's input and output: the runtime takes and gives tensors",
	"node/test_sequence_map_identity_2_sequences_expanded":         "sequences as the model's input and output: the runtime takes and gives tensors",
}

// Conformance is one test of the suite.
type Conformance struct {
	Suite, Name, Dir string
	Ops              []string
}

// ID is the test's name in the skip list: suite/name.
func (c Conformance) ID() string { return c.Suite + "/" + c.Name }

// ConformanceTests lists the suite's tests whose operators are all
// registered, sorted; and how many tests use operators that are not.
func ConformanceTests(t testing.TB) (in []Conformance, outside int) {
	root := Dir()
	if _, err := os.Stat(filepath.Join(root, "node")); err != nil {
		t.Skipf("ONNX conformance data not found at %s: apt-get install libonnx-testdata (or set BEAMGPU_ONNX_TESTDATA)", root)
	}
	registered := map[string]bool{}
	for _, d := range onnx.Ops() {
		registered[d.Name] = true
	}
	for _, suite := range Suites {
		dirs, err := os.ReadDir(filepath.Join(root, suite))
		require.NoError(t, err)
		for _, d := range dirs {
			dir := filepath.Join(root, suite, d.Name())
			data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
			require.NoError(t, err)
			var mp onnxpb.ModelProto
			require.NoError(t, proto.Unmarshal(data, &mp), dir)
			c := Conformance{Suite: suite, Name: d.Name(), Dir: dir}
			ok := true
			seen := map[string]bool{}
			for _, n := range allNodes(mp.GetGraph()) {
				op := n.GetOpType()
				if n.GetDomain() != "" && n.GetDomain() != "ai.onnx" {
					op = n.GetDomain() + "." + op
				}
				if !seen[op] {
					seen[op] = true
					c.Ops = append(c.Ops, op)
				}
				ok = ok && registered[op]
			}
			sort.Strings(c.Ops)
			if ok {
				in = append(in, c)
			} else {
				outside++
			}
		}
	}
	return in, outside
}

// allNodes returns g's nodes and those of its subgraphs (If's branches,
// Loop's and Scan's bodies), nested ones included.
func allNodes(g *onnxpb.GraphProto) []*onnxpb.NodeProto {
	var out []*onnxpb.NodeProto
	for _, n := range g.GetNode() {
		out = append(out, n)
		for _, a := range n.GetAttribute() {
			if a.GetG() != nil {
				out = append(out, allNodes(a.GetG())...)
			}
			for _, sg := range a.GetGraphs() {
				out = append(out, allNodes(sg)...)
			}
		}
	}
	return out
}

// ReadTensor reads a test data file (a TensorProto).
func ReadTensor(t testing.TB, path string) nd.Array {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var tp onnxpb.TensorProto
	require.NoError(t, proto.Unmarshal(data, &tp), path)
	a, err := onnx.ArrayOf(&tp, path)
	require.NoError(t, err)
	return a
}

// DataSets returns the inputs and expected outputs of each data set of a
// test directory in the layout of ONNX's test data (dir/test_data_set_N/
// input_I.pb and output_I.pb), the sets in order.
func DataSets(t testing.TB, dir string) (inputs, outputs [][]nd.Array) {
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	sort.Strings(sets)
	for _, s := range sets {
		var in, out []nd.Array
		for i := 0; ; i++ {
			p := filepath.Join(s, fmt.Sprintf("input_%d.pb", i))
			if _, err := os.Stat(p); err != nil {
				break
			}
			in = append(in, ReadTensor(t, p))
		}
		for i := 0; ; i++ {
			p := filepath.Join(s, fmt.Sprintf("output_%d.pb", i))
			if _, err := os.Stat(p); err != nil {
				break
			}
			out = append(out, ReadTensor(t, p))
		}
		inputs, outputs = append(inputs, in), append(outputs, out)
	}
	return inputs, outputs
}

// closeTo compares got with want as ONNX's backend tests do: the same type
// and shape, and every value within rtol 1e-3 and atol 1e-7 (NaN where
// NaN); integers and booleans equal.
func closeTo(got, want nd.Array) error {
	if got.Type != want.Type {
		return fmt.Errorf("type %v, want %v", got.Type, want.Type)
	}
	if !nd.SameShape(got.Shape, want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	if !got.Type.IsFloat() {
		if string(got.Data) != string(want.Data) {
			g, _ := nd.Int64s(got)
			w, _ := nd.Int64s(want)
			for i := range g {
				if g[i] != w[i] {
					return fmt.Errorf("element %d is %d, want %d", i, g[i], w[i])
				}
			}
		}
		return nil
	}
	g, w := nd.Float64s(got), nd.Float64s(want)
	const rtol, atol = 1e-3, 1e-7
	for i := range g {
		switch {
		case math.IsNaN(w[i]) != math.IsNaN(g[i]):
			return fmt.Errorf("element %d is %v, want %v", i, g[i], w[i])
		case math.IsNaN(w[i]):
		case math.IsInf(w[i], 0) || math.IsInf(g[i], 0):
			if g[i] != w[i] {
				return fmt.Errorf("element %d is %v, want %v", i, g[i], w[i])
			}
		case math.Abs(g[i]-w[i]) > atol+rtol*math.Abs(w[i]):
			return fmt.Errorf("element %d is %v, want %v (rtol %g, atol %g)", i, g[i], w[i], rtol, atol)
		}
	}
	return nil
}

// RunConformance runs one test with run (a model and its inputs to its
// outputs) and returns its error.
func RunConformance(t testing.TB, c Conformance, run func(m *onnx.Model, in []nd.Array) ([]nd.Array, error)) error {
	m, err := onnx.Load(os.DirFS(c.Dir), "model.onnx")
	if err != nil {
		return err
	}
	inputs, outputs := DataSets(t, c.Dir)
	if len(inputs) == 0 {
		return fmt.Errorf("no test data")
	}
	for s := range inputs {
		// ONNX's test data holds bfloat16 values as UINT16 tensors (NumPy
		// has no bfloat16): the same bits, retagged.
		for i, a := range inputs[s] {
			if i < len(m.Inputs) && m.Inputs[i].Type == nd.BFloat16 && a.Type == nd.Uint16 {
				inputs[s][i].Type = nd.BFloat16
			}
		}
		for i, a := range outputs[s] {
			if i < len(m.Outputs) && m.Outputs[i].Type == nd.BFloat16 && a.Type == nd.Uint16 {
				outputs[s][i].Type = nd.BFloat16
			}
		}
		got, err := run(m, inputs[s])
		if err != nil {
			return fmt.Errorf("data set %d: %w", s, err)
		}
		if len(got) != len(outputs[s]) {
			return fmt.Errorf("data set %d: %d outputs, want %d", s, len(got), len(outputs[s]))
		}
		for i := range got {
			if err := closeTo(got[i], outputs[s][i]); err != nil {
				return fmt.Errorf("data set %d: output %d (%s): %w", s, i, m.Outputs[i].Name, err)
			}
		}
	}
	return nil
}
