package main

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// sumOfOnes is y = ReduceSum(ConstantOfShape(x, value 1)) per row, x an
// int64 per row: row v asks the node "ones" for v float32s, 4v bytes.
func sumOfOnes(t *testing.T, path string) {
	t.Helper()
	ones := onnxtest.Node("ConstantOfShape", []string{"x"}, []string{"z"}, onnxtest.Tensor("value", nd.Of([]float32{1}, 1)))
	ones.Name = proto.String("ones")
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(onnxtest.Model(17,
		[]*onnxpb.NodeProto{ones, onnxtest.Node("ReduceSum", []string{"z"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Int64, -1)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1)})), 0o644))
}

// A model call over the memory budget is its rows' failure, naming the
// node, the bytes and the budget, and the other rows complete: exit 0, the
// counts reconcile. A row asks for 2^34 float32s (64 GiB) under
// --memory_budget=1GiB, then 2^38 (1 TiB) under the budget of
// $BEAMGPU_ONNX_MEMORY_BUDGET, then under the default, the memory
// available (it was "fatal error: runtime: out of memory": exit 2, every
// row lost, the run's lock left).
func TestMemoryBudget(t *testing.T) {
	t.Cleanup(func() { require.NoError(t, flag.Set("memory_budget", "")) })
	dir, out := t.TempDir(), t.TempDir()
	model := filepath.Join(dir, "ones.onnx")
	sumOfOnes(t, model)
	in := filepath.Join(dir, "x.npy")
	for _, c := range []struct {
		huge      int64
		flag, env string
		reason    string
	}{
		{1 << 34, "--memory_budget=1GiB", "", "over the memory budget of 1073741824 bytes (1.0 GiB; the budget given)"},
		{1 << 38, "", "2GiB", "over the memory budget of 2147483648 bytes (2.0 GiB; BEAMGPU_ONNX_MEMORY_BUDGET=2GiB)"},
		{1 << 38, "", "", "over the memory budget of "},
	} {
		t.Setenv(onnx.EnvMemoryBudget, c.env)
		x := nd.Of([]int64{3, 5, c.huge, 2})
		writeNPY(t, in, nd.Int64, x.Shape, x.Data)
		args := []string{"--model=" + model, "--input=" + in, "--output=" + out, "--backend=cpu", "--max_batch_size=1"}
		if c.flag != "" {
			args = append(args, c.flag)
		} else {
			require.NoError(t, flag.Set("memory_budget", ""))
		}
		code, text, err := runInfer(t, args...)
		require.NoError(t, err)
		assert.Equal(t, 0, code)
		assert.Contains(t, text, "rows: 4 in, 3 predicted, 1 failed")
		got, shape := readPredictions(t, out)
		assert.Equal(t, []int{4}, shape)
		assert.Equal(t, []float32{3, 5}, got[:2])
		assert.True(t, math.IsNaN(float64(got[2])))
		assert.Equal(t, float32(2), got[3])
		fails := readLines[step.Failure](t, filepath.Join(out, "failed.jsonl"))
		require.Len(t, fails, 1)
		t.Log(fails[0].Reason)
		assert.Equal(t, "#2", fails[0].Input)
		assert.Equal(t, "onnx", fails[0].Step)
		assert.Contains(t, fails[0].Reason, `node "ones" (ConstantOfShape, opset 17)`)
		assert.Contains(t, fails[0].Reason, strconv.FormatInt(4*c.huge, 10)+" bytes")
		assert.Contains(t, fails[0].Reason, c.reason)
		s := readSummary(t, out)
		assert.Equal(t, []int{4, 3, 1, 1}, []int{s.RowsIn, s.RowsPredicted, s.RowsFailed, s.Failures})
	}

	// A budget that is not an amount of memory is a flag error: exit 2.
	code, _, err := runInfer(t, "--model="+model, "--input="+in, "--output="+out, "--memory_budget=lots")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "--memory_budget=lots: want a positive amount of memory")
}

// countTo is y = float32(x) + 0 * (a Loop of ReduceMax(x) iterations, each
// adding 1 to a carried sum), x an int64 per row: row v runs the Loop v
// times.
func countTo(t *testing.T, path string) {
	t.Helper()
	body := onnxtest.Graph("body", []*onnxpb.NodeProto{
		onnxtest.Node("Identity", []string{"cond_in"}, []string{"cond_out"}),
		onnxtest.Node("Add", []string{"s_in", "one"}, []string{"s_out"}),
	}, []*onnxpb.ValueInfoProto{onnxtest.Value("i", nd.Int64), onnxtest.Value("cond_in", nd.Bool), onnxtest.Value("s_in", nd.Float32)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("cond_out", nd.Bool), onnxtest.Value("s_out", nd.Float32)},
		onnxtest.Init("one", nd.Scalar(float32(1))))
	loop := onnxtest.Node("Loop", []string{"m", "", "s0"}, []string{"s"}, body)
	loop.Name = proto.String("count")
	require.NoError(t, os.WriteFile(path, onnxtest.Bytes(onnxtest.Model(13,
		[]*onnxpb.NodeProto{
			onnxtest.Node("ReduceMax", []string{"x"}, []string{"m"}, onnxtest.Int("keepdims", 0)),
			loop,
			onnxtest.Node("Mul", []string{"s", "zero"}, []string{"z"}),
			onnxtest.Node("Cast", []string{"x"}, []string{"xf"}, onnxtest.Int("to", int64(nd.Float32))),
			onnxtest.Node("Add", []string{"xf", "z"}, []string{"y"}),
		},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Int64, -1)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1)},
		onnxtest.Init("s0", nd.Scalar(float32(0))), onnxtest.Init("zero", nd.Scalar(float32(0))))), 0o644))
}

// A model call past --call_timeout is its rows' failure, naming the node
// and the deadline, and the other rows complete: exit 0, the counts
// reconcile. Row 2 asks the Loop "count" for 2^40 iterations, which
// without a deadline run until the Loop's bound of 2^24 (a long time); a
// negative timeout is a flag error.
func TestCallTimeout(t *testing.T) {
	t.Cleanup(func() { require.NoError(t, flag.Set("call_timeout", inference.DefaultCallTimeout.String())) })
	dir, out := t.TempDir(), t.TempDir()
	model := filepath.Join(dir, "count.onnx")
	countTo(t, model)
	in := filepath.Join(dir, "x.npy")
	x := nd.Of([]int64{3, 5, 1 << 40, 2})
	writeNPY(t, in, nd.Int64, x.Shape, x.Data)
	code, text, err := runInfer(t, "--model="+model, "--input="+in, "--output="+out, "--backend=cpu", "--max_batch_size=1", "--call_timeout=1s")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 4 in, 3 predicted, 1 failed")
	got, shape := readPredictions(t, out)
	assert.Equal(t, []int{4}, shape)
	assert.Equal(t, []float32{3, 5}, got[:2])
	assert.True(t, math.IsNaN(float64(got[2])))
	assert.Equal(t, float32(2), got[3])
	fails := readLines[step.Failure](t, filepath.Join(out, "failed.jsonl"))
	require.Len(t, fails, 1)
	assert.Equal(t, "#2", fails[0].Input)
	assert.Contains(t, fails[0].Reason, `node "count" (Loop, opset 13): iteration `)
	assert.Contains(t, fails[0].Reason, "context deadline exceeded")
	s := readSummary(t, out)
	assert.Equal(t, []int{4, 3, 1, 1}, []int{s.RowsIn, s.RowsPredicted, s.RowsFailed, s.Failures})

	code, _, err = runInfer(t, "--model="+model, "--input="+in, "--output="+out, "--call_timeout=-1s")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "--call_timeout=-1s: want a duration of 0 (no limit) or more")
}
