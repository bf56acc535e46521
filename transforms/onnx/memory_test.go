package onnx_test

import (
	"errors"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rss is the process's resident memory now, in bytes (Linux); 0 elsewhere.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	return 0
}

// hugeModels are models whose run-time shapes need 2^34 to 2^36 elements
// (64 GiB to 256 GiB of float32), each with the node that asks and the
// bytes it asks for.
func hugeModels() map[string]struct {
	model *onnxpb.ModelProto
	node  string
	bytes int64
} {
	x := values{onnxtest.Value("x", nd.Float32, 1, 4)}
	y := values{onnxtest.Value("y", nd.Float32)}
	node := func(op, name string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		n := onnxtest.Node(op, in, out, attrs...)
		n.Name = &name
		return n
	}
	type huge = struct {
		model *onnxpb.ModelProto
		node  string
		bytes int64
	}
	return map[string]huge{
		// A pad of 2^34 along the last axis, into the workspace (a Relu
		// reads it): the workspace asks, 64-byte aligned.
		"Pad": {onnxtest.Model(18, nodes{
			node("Pad", "pad_huge", []string{"x", "pads"}, []string{"p"}),
			node("Relu", "relu", []string{"p"}, []string{"y"}),
		}, x, y, onnxtest.Init("pads", nd.Of([]int64{0, 0, 0, 1 << 34}))),
			`node "pad_huge" (Pad, opset 18)`, ((4+1<<34)*4 + 63) &^ 63},
		// 2^34 zeros, added to x: the ConstantOfShape's value is in the workspace.
		"ConstantOfShape": {onnxtest.Model(17, nodes{
			node("ConstantOfShape", "zeros_huge", []string{"shape"}, []string{"z"}),
			node("Add", "add", []string{"z", "x"}, []string{"y"}),
		}, x, y, onnxtest.Init("shape", nd.Of([]int64{1 << 32, 4}))),
			`node "zeros_huge" (ConstantOfShape, opset 17)`, 1 << 36},
		// x expanded to 2^36 elements, a graph output.
		"Expand": {onnxtest.Model(17, nodes{
			node("Expand", "expand_huge", []string{"x", "shape"}, []string{"y"}),
		}, x, y, onnxtest.Init("shape", nd.Of([]int64{1 << 34, 4}))),
			`node "expand_huge" (Expand, opset 17)`, 1 << 38},
		// x resized to 2^17 x 2^17, a graph output.
		"Resize": {onnxtest.Model(13, nodes{
			node("Resize", "resize_huge", []string{"x", "", "", "sizes"}, []string{"y"}),
		}, x, y, onnxtest.Init("sizes", nd.Of([]int64{1 << 17, 1 << 17}))),
			`node "resize_huge" (Resize, opset 13)`, 1 << 36},
	}
}

// A model whose run-time shapes need tens of GiB fails fast, naming the
// node, the bytes and the budget, without allocating them: the process's
// memory stays where it was (it was "fatal error: runtime: out of
// memory", the worker and every row lost).
func TestMemoryBudgetRefusesHugeShapes(t *testing.T) {
	x := []nd.Array{nd.Of([]float32{1, -2, 3, -4}, 1, 4)}
	for name, c := range hugeModels() {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(c.model)
			require.NoError(t, err)
			runtime.GC()
			before := rss(t)
			start := time.Now()
			_, err = m.RunWith(x, onnx.RunOptions{MemoryBudget: 1 << 30})
			require.Error(t, err)
			t.Log(err)
			assert.True(t, errors.Is(err, onnx.ErrMemoryBudget), "%v", err)
			var me *onnx.MemoryError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, c.node, me.Node)
			assert.Equal(t, c.bytes, me.Bytes)
			assert.Equal(t, int64(1<<30), me.Budget)
			assert.Contains(t, err.Error(), c.node)
			assert.Contains(t, err.Error(), strconv.FormatInt(c.bytes, 10)+" bytes")
			assert.Contains(t, err.Error(), "over the memory budget of 1073741824 bytes (1.0 GiB; the budget given)")
			assert.Less(t, time.Since(start), 10*time.Second)
			assert.Less(t, rss(t)-before, int64(64<<20), "resident memory grew")

			// The default budget: the environment variable, else the memory
			// available, which no machine has 2^36 float32s of (256 GiB) ...
			t.Setenv(onnx.EnvMemoryBudget, "512MiB")
			_, err = m.Run(x)
			assert.ErrorContains(t, err, "over the memory budget of 536870912 bytes (512.0 MiB; BEAMGPU_ONNX_MEMORY_BUDGET=512MiB)")
			// ... and a model that fits runs on.
			small, err := onnxtest.Load(onnxtest.Model(17, nodes{onnxtest.Node("Relu", []string{"x"}, []string{"y"})},
				values{onnxtest.Value("x", nd.Float32, 1, 4)}, values{onnxtest.Value("y", nd.Float32, 1, 4)}))
			require.NoError(t, err)
			out, err := small.Run(x)
			require.NoError(t, err)
			assert.Equal(t, []float32{1, 0, 3, 0}, nd.MustAs[float32](out[0]))
		})
	}
}

// Without a budget given or set in the environment, the budget is the
// memory available: 4 TiB of float32 (2^40 elements, the most an array may
// have) is over it on any machine this runs on.
func TestMemoryBudgetDefaultIsTheMemoryAvailable(t *testing.T) {
	t.Setenv(onnx.EnvMemoryBudget, "")
	b, source, err := onnx.DefaultMemoryBudget()
	require.NoError(t, err)
	t.Logf("default memory budget: %d bytes (%s)", b, source)
	assert.Greater(t, b, int64(0))
	if runtime.GOOS == "linux" {
		assert.Contains(t, source, "the memory available")
	}
	m, err := onnxtest.Load(onnxtest.Model(17, nodes{onnxtest.Node("Expand", []string{"x", "shape"}, []string{"y"})},
		values{onnxtest.Value("x", nd.Float32, 1, 4)}, values{onnxtest.Value("y", nd.Float32)},
		onnxtest.Init("shape", nd.Of([]int64{1 << 38, 4}))))
	require.NoError(t, err)
	before := rss(t)
	_, err = m.Run([]nd.Array{nd.Of([]float32{1, 2, 3, 4}, 1, 4)})
	require.ErrorIs(t, err, onnx.ErrMemoryBudget)
	assert.ErrorContains(t, err, "4398046511104 bytes (4.0 TiB)")
	assert.Less(t, rss(t)-before, int64(64<<20))

	t.Setenv(onnx.EnvMemoryBudget, "lots")
	_, err = m.Run([]nd.Array{nd.Of([]float32{1, 2, 3, 4}, 1, 4)})
	assert.ErrorContains(t, err, `$BEAMGPU_ONNX_MEMORY_BUDGET: "lots": unknown unit`)
}

// Shapes whose element counts overflow int64 (pads of 2^63-1, a
// ConstantOfShape or an Expand of 2^62 x 2^62) are errors at plan time,
// not panics nor wrapped-around shapes.
func TestShapesThatOverflow(t *testing.T) {
	x := values{onnxtest.Value("x", nd.Float32, 1, 4)}
	y := values{onnxtest.Value("y", nd.Float32)}
	for name, c := range map[string]struct {
		model *onnxpb.ModelProto
		want  string
	}{
		"Pad": {onnxtest.Model(18, nodes{onnxtest.Node("Pad", []string{"x", "pads"}, []string{"y"})}, x, y,
			onnxtest.Init("pads", nd.Of([]int64{0, math.MaxInt64, 0, math.MaxInt64}))), "is more than an axis may hold"},
		"Pad negative": {onnxtest.Model(18, nodes{onnxtest.Node("Pad", []string{"x", "pads"}, []string{"y"})}, x, y,
			onnxtest.Init("pads", nd.Of([]int64{math.MinInt64, 0, 0, 0}))), "is more than an axis may hold"},
		"ConstantOfShape": {onnxtest.Model(17, nodes{onnxtest.Node("ConstantOfShape", []string{"shape"}, []string{"y"})}, x, y,
			onnxtest.Init("shape", nd.Of([]int64{1 << 62, 1 << 62}))), "dimension 0 is 4611686018427387904"},
		"Expand": {onnxtest.Model(17, nodes{onnxtest.Node("Expand", []string{"x", "shape"}, []string{"y"})}, x, y,
			onnxtest.Init("shape", nd.Of([]int64{1 << 62, 1 << 62, 4}))), "dimension 0 is 4611686018427387904"},
		"Split": {onnxtest.Model(17, nodes{onnxtest.Node("Split", []string{"x", "split"}, []string{"y", "z"}, onnxtest.Int("axis", 1))}, x,
			values{onnxtest.Value("y", nd.Float32), onnxtest.Value("z", nd.Float32)},
			onnxtest.Init("split", nd.Of([]int64{math.MaxInt64, 5}))), "split [9223372036854775807 5] has a part of 9223372036854775807, axis 1 has 4"},
		"Expand product": {onnxtest.Model(17, nodes{onnxtest.Node("Expand", []string{"x", "shape"}, []string{"y"})}, x, y,
			onnxtest.Init("shape", nd.Of([]int64{1 << 30, 1 << 30, 1 << 30, 4}))), "more elements than an array may hold"},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := onnxtest.Load(c.model)
			if err == nil {
				_, err = m.Run([]nd.Array{nd.Of([]float32{1, 2, 3, 4}, 1, 4)})
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{"4GiB": 4 << 30, "512 MiB": 512 << 20, "1.5GB": 1.5e9, "8000000000": 8e9, "1kib": 1024, "2TB": 2e12} {
		n, err := onnx.ParseBytes(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, n, s)
	}
	for _, s := range []string{"", "GiB", "-1GiB", "4 parsecs", "1e30", "99999999999TiB"} {
		_, err := onnx.ParseBytes(s)
		assert.Error(t, err, s)
	}
}
