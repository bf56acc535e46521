package inference_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeSeq writes a model of token rows x int64[N, seq]: y = float(x)
// (float32 [N, seq]) and s = the sum of y over the sequence (float32 [N]).
// y's sequence axis is named yAxis, or as the input's ("seq") for "".
func writeSeq(t *testing.T, yAxis string) string {
	if yAxis == "" {
		yAxis = "seq"
	}
	named := func(v *onnxpb.ValueInfoProto, axis string) *onnxpb.ValueInfoProto {
		v.Type.GetTensorType().Shape.Dim[1].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: axis}
		return v
	}
	x, y := named(onnxtest.Value("x", nd.Int64, -1, -1), "seq"), named(onnxtest.Value("y", nd.Float32, -1, -1), yAxis)
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{
			onnxtest.Node("Cast", []string{"x"}, []string{"y"}, onnxtest.Int("to", int64(nd.Float32))),
			onnxtest.Node("ReduceSum", []string{"y", "axes"}, []string{"s"}, onnxtest.Int("keepdims", 0)),
		},
		[]*onnxpb.ValueInfoProto{x},
		[]*onnxpb.ValueInfoProto{y, onnxtest.Value("s", nd.Float32, -1)},
		onnxtest.Init("axes", nd.Of([]int64{1}, 1)))
	path := filepath.Join(t.TempDir(), "seq"+yAxis+".onnx")
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(m), 0o644))
	return path
}

func seqRow(i int64, xs ...int64) inference.Example {
	return inference.Example{Index: i, Inputs: []inference.Tensor{{Name: "x", Array: nd.Of(xs, len(xs))}}}
}

// Rows of different lengths share a padded call: y is cut back to each
// row's length (its axis shares the input's name), s sees the padding.
func TestPadRows(t *testing.T) {
	path := writeSeq(t, "")
	rows := []inference.Example{seqRow(0, 1, 2, 3), seqRow(1, 4), seqRow(2, 5, 6, 7, 8, 9)}
	for _, c := range []struct {
		pad  float64
		sums []float32
	}{{0, []float32{6, 4, 35}}, {10, []float32{26, 44, 35}}} {
		h, err := inference.ONNX(t.Context(), path, inference.PadRows(map[string]float64{"x": c.pad}))
		require.NoError(t, err)
		assert.Equal(t, "rows are padded; outputs cut back per row: y axis 1 as x axis 1", h.Padding())
		m, err := h.Load(t.Context())
		require.NoError(t, err)
		out, err := m.Predict(t.Context(), backend.CPU, rows)
		require.NoError(t, err)
		require.Len(t, out, 3)
		for i, want := range [][]float32{{1, 2, 3}, {4}, {5, 6, 7, 8, 9}} {
			assert.Equal(t, want, nd.MustAs[float32](out[i][0].Array), "row %d", i)
			assert.Equal(t, []int{len(want)}, out[i][0].Array.Shape)
			assert.Equal(t, []float32{c.sums[i]}, []float32{nd.MustAs[float32](out[i][1].Array)[0]}, "row %d, pad %v", i, c.pad)
		}
	}
	_, err := inference.ONNX(t.Context(), path, inference.PadRows(map[string]float64{"input_ids": 0}))
	assert.ErrorContains(t, err, `pad value for "input_ids": the model`)
	assert.ErrorContains(t, err, "x: int64[Nxseq]")
}

// An output axis that is dynamic under a name of no input axis cannot be
// cut back: rows of different lengths run in calls of their own.
func TestPadRowsUndecided(t *testing.T) {
	h, err := inference.ONNX(t.Context(), writeSeq(t, "other"), inference.PadRows(map[string]float64{"x": 10}))
	require.NoError(t, err)
	assert.Contains(t, h.Padding(), "run in calls of their own")
	assert.Contains(t, h.Padding(), "y: float32[Nxother]'s axis 1 (other)")
	m, err := h.Load(t.Context())
	require.NoError(t, err)
	out, err := m.Predict(t.Context(), backend.CPU, []inference.Example{seqRow(0, 1, 2), seqRow(1, 4), seqRow(2, 3, 3)})
	require.NoError(t, err)
	for i, want := range [][]float32{{1, 2}, {4}, {3, 3}} {
		assert.Equal(t, want, nd.MustAs[float32](out[i][0].Array), "row %d", i)
		assert.Equal(t, want[0]+want[len(want)-1]*float32(len(want)-1), nd.MustAs[float32](out[i][1].Array)[0], "row %d", i)
	}
}

func init() { register.Function1x1(describeSeq) }

func describeSeq(r inference.Result) string {
	y, _ := r.Output("y")
	return fmt.Sprintf("%d: %v", r.Index, nd.MustAs[float32](y))
}

// RunInferenceByLength batches rows of many lengths by length, pads them,
// and gives each its own outputs, whatever the batch composition.
func TestRunInferenceByLength(t *testing.T) {
	h, err := inference.ONNX(t.Context(), writeSeq(t, ""), inference.PadRows(nil))
	require.NoError(t, err)
	var rows []inference.Example
	var want []any
	for i := range 40 {
		n := 1 + (i*7)%13
		xs := make([]int64, n)
		ys := make([]float32, n)
		for j := range xs {
			xs[j], ys[j] = int64(i*100+j), float32(i*100+j)
		}
		rows = append(rows, seqRow(int64(i), xs...))
		want = append(want, fmt.Sprintf("%d: %v", i, ys))
	}
	for _, p := range []inference.LengthBatching{{MaxBatchSize: 7, Window: 16}, {MaxBatchTokens: 30}, {Window: 1, MaxBatchSize: 3}} {
		pl, s := beam.NewPipelineWithRoot()
		res, failed := inference.RunInferenceByLength(s, beam.CreateList(s, rows), h, p, cpuONNX)
		passert.Equals(s, beam.ParDo(s, describeSeq, res), want...)
		passert.Empty(s, failed)
		ptest.RunAndValidate(t, pl)
	}
}
