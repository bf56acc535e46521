package onnx_test

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// The test models: models exported from PyTorch with seeded random weights
// (a ResNet-style CNN, MobileNetV2, a transformer encoder, each at opset 14
// and 17), a fixed input each and ONNX Runtime's outputs for it; see
// testdata/models/ORIGIN.md. containers/onnx/export_models.py writes them
// and the list, testdata/models/models.txt.

const modelsDir = "testdata/models"

// testModel is a line of models.txt: name, model, input and output files
// (relative to models.txt).
type testModel struct {
	Name, Model, Input, Output string
}

// testModels reads models.txt.
func testModels(t testing.TB) []testModel {
	f, err := os.Open(filepath.Join(modelsDir, "models.txt"))
	require.NoError(t, err)
	defer f.Close()
	var list []testModel
	s := bufio.NewScanner(f)
	for line := 1; s.Scan(); line++ {
		text := strings.TrimSpace(s.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		require.Len(t, fields, 4, "models.txt line %d: want name, model, input, output", line)
		list = append(list, testModel{
			Name:   fields[0],
			Model:  filepath.Join(modelsDir, fields[1]),
			Input:  filepath.Join(modelsDir, fields[2]),
			Output: filepath.Join(modelsDir, fields[3]),
		})
	}
	require.NoError(t, s.Err())
	require.NotEmpty(t, list, "models.txt lists no model")
	return list
}

// Tolerances against ONNX Runtime: the relative error of the whole output
// (the norm of the difference over the norm of ONNX Runtime's output), and
// of each element whose magnitude is at least tinyFraction of the output's
// largest. PyTorch's own outputs are within 1e-6 of ONNX Runtime's in norm
// (ORIGIN.md); this runtime's are within 5e-7 in norm and 4e-5 elementwise.
const (
	modelRelTol  = 1e-4
	tinyFraction = 1e-2
)

// compareOutput checks got against ONNX Runtime's want: type and shape,
// no NaN or infinity where want has none, the relative error in norm and
// elementwise where values are not tiny, and, for logits ([N, classes]),
// the same class (argmax) in every row. logf, if not nil, is given the
// errors of an output that passes.
func compareOutput(got, want nd.Array, logf func(format string, args ...any)) error {
	if got.Type != want.Type || !nd.SameShape(got.Shape, want.Shape) {
		return fmt.Errorf("%v%s, ONNX Runtime's is %v%s", got.Type, nd.ShapeString(got.Shape), want.Type, nd.ShapeString(want.Shape))
	}
	g, w := nd.Float64s(got), nd.Float64s(want)
	var diff2, want2, scale float64
	for i := range w {
		if math.IsNaN(g[i]) || math.IsInf(g[i], 0) {
			return fmt.Errorf("element %d is %v, ONNX Runtime's is %v", i, g[i], w[i])
		}
		diff2 += (g[i] - w[i]) * (g[i] - w[i])
		want2 += w[i] * w[i]
		scale = max(scale, math.Abs(w[i]))
	}
	if rel := math.Sqrt(diff2 / want2); !(rel <= modelRelTol) {
		return fmt.Errorf("relative error in norm %.3g, over %g", rel, modelRelTol)
	}
	for i := range w {
		if math.Abs(w[i]) >= tinyFraction*scale {
			if rel := math.Abs(g[i]-w[i]) / math.Abs(w[i]); rel > modelRelTol {
				return fmt.Errorf("element %d is %v, ONNX Runtime's is %v: relative error %.3g, over %g", i, g[i], w[i], rel, modelRelTol)
			}
		}
	}
	if logf != nil {
		var worst float64
		for i := range w {
			if math.Abs(w[i]) >= tinyFraction*scale {
				worst = max(worst, math.Abs(g[i]-w[i])/math.Abs(w[i]))
			}
		}
		logf("relative error to ONNX Runtime: %.2g in norm, %.2g at most elementwise", math.Sqrt(diff2/want2), worst)
	}
	if len(want.Shape) == 2 {
		rows, classes := want.Shape[0], want.Shape[1]
		for r := range rows {
			gc, wc := argmax(g[r*classes:(r+1)*classes]), argmax(w[r*classes:(r+1)*classes])
			if gc != wc {
				return fmt.Errorf("row %d: class %d, ONNX Runtime's is %d", r, gc, wc)
			}
		}
	}
	return nil
}

func argmax(v []float64) int {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}

// TestModels runs each test model on its input on the CPU and compares
// every output with ONNX Runtime's.
func TestModels(t *testing.T) {
	for _, tm := range testModels(t) {
		t.Run(tm.Name, func(t *testing.T) {
			m, err := onnxtest.LoadFile(tm.Model)
			if err != nil {
				t.Fatalf("model %s: %v%s", tm.Name, err, missingOps(t, tm.Model))
			}
			in := onnxtest.ReadTensor(t, tm.Input)
			want := onnxtest.ReadTensor(t, tm.Output)
			got, err := m.Run([]nd.Array{in})
			if err != nil {
				t.Fatalf("model %s: %v", tm.Name, err)
			}
			require.Len(t, got, len(m.Outputs), "model %s", tm.Name)
			// The reference files hold the model's first output.
			if err := compareOutput(got[0], want, t.Logf); err != nil {
				t.Errorf("model %s, output %q: %v", tm.Name, m.Outputs[0].Name, err)
			}
			// The batch axis is dynamic: plans for a batch of 1 and of 6
			// (the input's rows repeated) give ONNX Runtime's rows.
			for _, n := range []int{1, 6} {
				p, err := m.Plan([]nd.Array{repeatRows(in, n)})
				if err != nil {
					t.Fatalf("model %s, plan for batch %d: %v", tm.Name, n, err)
				}
				got, err := p.Run([]nd.Array{repeatRows(in, n)})
				if err != nil {
					t.Fatalf("model %s, plan for batch %d: %v", tm.Name, n, err)
				}
				if err := compareOutput(got[0], repeatRows(want, n), nil); err != nil {
					t.Errorf("model %s, plan for batch %d, output %q: %v", tm.Name, n, m.Outputs[0].Name, err)
				}
			}
		})
	}
}

// The Fashion-MNIST CNN shipped with the fashion pipeline
// (pipelines/fashion/data/README.md): its accuracy on the 10,000 test
// images through the CPU runtime.
const (
	fashionDir      = "../../pipelines/fashion/data"
	fashionCNN      = fashionDir + "/cnn-fashion.onnx"
	fashionMinAccur = 0.91
)

// TestFashionCNN classifies the Fashion-MNIST test set with the shipped CNN
// (pixels x/255, batches of 500 through one Plan) and checks its accuracy.
func TestFashionCNN(t *testing.T) {
	m, err := onnxtest.LoadFile(fashionCNN)
	require.NoError(t, err, missingOps(t, fashionCNN))
	images, err := tensor.ReadImagesSize(filepath.Join(fashionDir, "t10k-images-idx3-ubyte.gz"), 28, 28)
	require.NoError(t, err)
	idx, err := tensor.ReadIDX(filepath.Join(fashionDir, "t10k-labels-idx1-ubyte.gz"))
	require.NoError(t, err)
	labels, err := idx.Labels()
	require.NoError(t, err)
	require.Len(t, labels, images.Rows)

	const batch = 500
	require.Zero(t, images.Rows%batch)
	x := nd.Zeros(nd.Float32, batch, 1, 28, 28)
	p, err := m.Plan([]nd.Array{x})
	require.NoError(t, err)
	right := 0
	for lo := 0; lo < images.Rows; lo += batch {
		xs := nd.MustAs[float32](x)
		for i, v := range images.X[lo*784 : (lo+batch)*784] {
			xs[i] = v / 255
		}
		out, err := p.Run([]nd.Array{x})
		require.NoError(t, err)
		require.Equal(t, []int{batch, 10}, out[0].Shape)
		logits := nd.Float64s(out[0])
		for r := range batch {
			if argmax(logits[r*10:(r+1)*10]) == int(labels[lo+r]) {
				right++
			}
		}
	}
	acc := float64(right) / float64(images.Rows)
	t.Logf("%s: accuracy %.4f (%d / %d)", filepath.Base(fashionCNN), acc, right, images.Rows)
	require.GreaterOrEqual(t, acc, fashionMinAccur)
}

// missingOps names the operators of the model at path that no kernel is
// registered for (the loader names only the first it meets), for a test's
// failure message.
func missingOps(t testing.TB, path string) string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var mp onnxpb.ModelProto
	require.NoError(t, proto.Unmarshal(data, &mp), path)
	have := map[string]bool{}
	for _, d := range onnx.Ops() {
		have[d.Name] = true
	}
	var missing []string
	for _, n := range mp.GetGraph().GetNode() {
		if op := n.GetOpType(); !have[op] && !slices.Contains(missing, op) {
			missing = append(missing, op)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	slices.Sort(missing)
	return fmt.Sprintf(" (operators without a kernel: %s)", strings.Join(missing, ", "))
}

// TestCompareOutput checks the comparison itself.
func TestCompareOutput(t *testing.T) {
	want := nd.Of([]float32{1, -2, 0.5, 1e-4, 3, 0.25}, 2, 3)
	cases := []struct {
		name string
		got  []float32
		err  string
	}{
		{"same", []float32{1, -2, 0.5, 1e-4, 3, 0.25}, ""},
		{"within", []float32{1.00002, -2, 0.5, 1e-4, 3.0001, 0.25}, ""},
		{"tiny element off", []float32{1, -2, 0.5, 1.1e-4, 3, 0.25}, ""},
		{"element off", []float32{1, -2, 0.5002, 1e-4, 3, 0.25}, "element 2"},
		{"norm off", []float32{1.01, -2.01, 0.5, 1e-4, 3.01, 0.25}, "in norm"},
		{"NaN", []float32{1, float32(math.NaN()), 0.5, 1e-4, 3, 0.25}, "element 1 is NaN"},
	}
	for _, c := range cases {
		err := compareOutput(nd.Of(c.got, 2, 3), want, nil)
		if c.err == "" {
			require.NoError(t, err, c.name)
		} else {
			require.ErrorContains(t, err, c.err, c.name)
		}
	}
	// A near tie decided the other way is another class, however close.
	require.ErrorContains(t, compareOutput(nd.Of([]float32{1.0000001, 1, 0}, 1, 3), nd.Of([]float32{1, 1.0000001, 0}, 1, 3), nil), "row 0: class 0, ONNX Runtime's is 1")
	require.ErrorContains(t, compareOutput(nd.Of([]float32{1, 2}, 2), want, nil), "ONNX Runtime's is float32[2x3]")
}

// BenchmarkModels runs each opset-17 test model at batch 64 (its input's
// rows repeated) on the CPU runtime and reports the median time of a batch
// (ms/batch) and rows/s; `make bench` compares them with ONNX Runtime's on
// the same models (containers/bench/peers.sh).
func BenchmarkModels(b *testing.B) {
	const batch = 64
	for _, tm := range testModels(b) {
		if !strings.HasSuffix(tm.Name, "-opset17") {
			continue
		}
		b.Run(tm.Name, func(b *testing.B) {
			m, err := onnxtest.LoadFile(tm.Model)
			if err != nil {
				b.Fatalf("model %s: %v", tm.Name, err)
			}
			in := repeatRows(onnxtest.ReadTensor(b, tm.Input), batch)
			p, err := m.Plan([]nd.Array{in})
			if err != nil {
				b.Fatalf("model %s: %v", tm.Name, err)
			}
			if _, err := p.Run([]nd.Array{in}); err != nil { // warm-up
				b.Fatalf("model %s: %v", tm.Name, err)
			}
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := p.Run([]nd.Array{in}); err != nil {
					b.Fatalf("model %s: %v", tm.Name, err)
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			med := times[len(times)/2]
			if len(times)%2 == 0 {
				med = (times[len(times)/2-1] + times[len(times)/2]) / 2
			}
			b.ReportMetric(float64(med)/1e6, "ms/batch")
			b.ReportMetric(batch/med.Seconds(), "rows/s")
		})
	}
}

// repeatRows makes an array of n rows from a's rows, repeated in order.
func repeatRows(a nd.Array, n int) nd.Array {
	rows := a.Shape[0]
	per := len(a.Data) / rows
	out := nd.Zeros(a.Type, append([]int{n}, a.Shape[1:]...)...)
	for r := range n {
		copy(out.Data[r*per:(r+1)*per], a.Data[(r%rows)*per:(r%rows+1)*per])
	}
	return out
}

// The products' work of a plan: positive, and linear in the batch.
func TestProductFLOPs(t *testing.T) {
	m, err := onnxtest.LoadFile(filepath.Join(modelsDir, "resnet-opset17.onnx"))
	require.NoError(t, err)
	p, err := m.Plan([]nd.Array{nd.Zeros(nd.Float32, 2, 3, 64, 64)})
	require.NoError(t, err)
	assert.Positive(t, p.ProductFLOPs())
	p8, err := m.Plan([]nd.Array{nd.Zeros(nd.Float32, 8, 3, 64, 64)})
	require.NoError(t, err)
	assert.InDelta(t, 4*p.ProductFLOPs(), p8.ProductFLOPs(), 1, "linear in the batch")
	// Fused steps (a Conv with its Add and Relu) count as their Conv did.
	plain, err := onnxtest.LoadFile(filepath.Join(modelsDir, "resnet-opset17.onnx"))
	require.NoError(t, err)
	old := onnx.SetFusion(false)
	pp, err := plain.Plan([]nd.Array{nd.Zeros(nd.Float32, 2, 3, 64, 64)})
	onnx.SetFusion(old)
	require.NoError(t, err)
	require.Less(t, len(p.StepOps()), len(pp.StepOps()), "the fused plan has fewer steps")
	assert.Equal(t, pp.ProductFLOPs(), p.ProductFLOPs(), "fused and unfused plans do the same products")
}
