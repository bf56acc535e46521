package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// positivesModel writes a model whose outputs' shapes come from the data, as
// a detector's do: x [1, 8] -> pos [K], x's positive values, and idx [K, 2],
// their coordinates (NonZero), K differing row to row.
func positivesModel(t *testing.T, path string) {
	t.Helper()
	m := onnxtest.Model(13, []*onnxpb.NodeProto{
		onnxtest.Node("Greater", []string{"x", "zero"}, []string{"gt"}),
		onnxtest.Node("NonZero", []string{"gt"}, []string{"nz"}),
		onnxtest.Node("Transpose", []string{"nz"}, []string{"idx"}),
		onnxtest.Node("GatherND", []string{"x", "idx"}, []string{"pos"}),
	}, []*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, 1, 8)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("pos", nd.Float32, -1), onnxtest.Value("idx", nd.Int64, -1, 2)},
		onnxtest.Init("zero", nd.Of([]float32{0})))
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(m), 0o644))
}

// A model whose outputs' shapes depend on the data (detections per row):
// every output of each row is written to predictions.jsonl with its name
// and its own shape, none lost or cut (a row of one detection keeps its
// axis; a row of none is an empty one), and the counts reconcile.
func TestDataShapedOutputsJSONL(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	model := filepath.Join(dir, "positives.onnx")
	positivesModel(t, model)
	rows := [][]float32{
		{-1, -2, -3, -4, -5, -6, -7, -8},
		{-1, 2, -3, -4, -5, -6, -7, -8},
		{1, -2, 3, -4, 5, -6, -7, -8},
		{1, 2, 3, 4, 5, 6, 7, 8},
		{-1, -2, -3, -4, -5, -6, -7, 0.5},
		{0, 0, 9, 0, 0, 0, 4, 0},
	}
	data := make([]byte, 0, 6*8*4)
	for _, r := range rows {
		for _, v := range r {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
	}
	in := filepath.Join(dir, "rows.npy")
	writeNPY(t, in, nd.Float32, []int{6, 8}, data)
	code, text, err := runInfer(t, "--model="+model, "--input="+in, "--output="+out, "--backend=cpu", "--max_batch_size=4")
	require.NoError(t, err)
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "rows: 6 in, 6 predicted, 0 failed")
	assert.NoFileExists(t, filepath.Join(out, predictionsFile), "rows of different shapes: predictions.jsonl only")
	got := readLines[outputsJSON](t, filepath.Join(out, rowsFile))
	require.Len(t, got, len(rows))
	for i, r := range rows {
		var pos []float64
		var idx []float64
		for j, v := range r {
			if v > 0 {
				pos = append(pos, float64(v))
				idx = append(idx, 0, float64(j))
			}
		}
		require.Equal(t, i, got[i].Row)
		require.True(t, got[i].Predicted, "row %d", i)
		p, ix := got[i].Outputs["pos"], got[i].Outputs["idx"]
		assert.Equal(t, []int{len(pos)}, p.Shape, "row %d: pos", i)
		assert.Equal(t, []int{len(pos), 2}, ix.Shape, "row %d: idx", i)
		assert.Equal(t, pos, derefs(p.Values), "row %d: pos", i)
		assert.Equal(t, idx, derefs(ix.Values), "row %d: idx", i)
	}
	s := readSummary(t, out)
	assert.Equal(t, 6, s.RowsIn)
	assert.Equal(t, 6, s.RowsPredicted)
}

func derefs(v []*float64) []float64 {
	var out []float64
	for _, p := range v {
		if p == nil {
			out = append(out, math.NaN())
			continue
		}
		out = append(out, *p)
	}
	return out
}
