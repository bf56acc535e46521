package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"google.golang.org/protobuf/proto"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The memory available under a cgroup is its limit less its usage, less
// the inactive file cache the kernel reclaims; the tightest of the
// process's cgroup and its ancestors counts; a cgroup without a limit
// ("max", v1's huge number) does not.
func TestCgroupFree(t *testing.T) {
	sys := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(sys, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	// v2: the job's cgroup has 4 GiB, 3 GiB used of which 1 GiB inactive
	// files; its parent 16 GiB, 15 GiB used; the root no limit.
	write("memory.max", "max\n")
	write("memory.current", "100\n")
	write("pod/memory.max", "17179869184\n")
	write("pod/memory.current", "16106127360\n")
	write("pod/job/memory.max", "4294967296\n")
	write("pod/job/memory.current", "3221225472\n")
	write("pod/job/memory.stat", "anon 2147483648\ninactive_file 1073741824\nactive_file 0\n")
	// v1, beside it: a limit of 2 GiB, 1.5 GiB used; the root unlimited.
	write("memory/memory.limit_in_bytes", "9223372036854771712\n")
	write("memory/memory.usage_in_bytes", "100\n")
	write("memory/app/memory.limit_in_bytes", "2147483648\n")
	write("memory/app/memory.usage_in_bytes", "1610612736\n")
	write("memory/app/memory.stat", "total_inactive_file 0\n")
	proc := filepath.Join(sys, "cgroup")
	require.NoError(t, os.WriteFile(proc, []byte("12:memory:/app\n3:cpu:/app\n0::/pod/job\n"), 0o644))

	free := map[string]int64{}
	for _, c := range cgroupDirs(proc, sys) {
		if n, ok := cgroupFree(c); ok {
			free[c.dir] = n
		}
	}
	assert.Equal(t, map[string]int64{
		filepath.Join(sys, "pod/job"):    2 << 30,   // 4 GiB - (3 GiB - 1 GiB)
		filepath.Join(sys, "pod"):        1 << 30,   // 16 GiB - 15 GiB
		filepath.Join(sys, "memory/app"): 512 << 20, // 2 GiB - 1.5 GiB
	}, free)

	_, ok := meminfo(filepath.Join(sys, "nofile"), "MemAvailable")
	assert.False(t, ok)
	write("meminfo", "MemTotal:       24000000 kB\nMemAvailable:   12345678 kB\n")
	kb, ok := meminfo(filepath.Join(sys, "meminfo"), "MemAvailable")
	assert.True(t, ok)
	assert.Equal(t, int64(12345678), kb)
}

// A model keeps its plans' idle workspaces to a total, the least recently
// used given up first: run at 40 batch sizes (a plan and a workspace
// each), it holds at most the bound, and the plan it ran last keeps its
// state (its next run makes none); under the default bound, one plan run
// again and again keeps its state.
func TestIdleWorkspacesBounded(t *testing.T) {
	m := reluAdd(t)
	run := func(rows int) *Plan {
		in := []nd.Array{nd.Zeros(nd.Float32, rows, 64)}
		p, err := m.Plan(in)
		require.NoError(t, err)
		_, err = p.Run(in)
		require.NoError(t, err)
		return p
	}
	one := run(1)
	require.Positive(t, one.work)
	for range 5 {
		run(1)
	}
	assert.Zero(t, m.states.dropped, "one plan run again and again keeps its state")
	assert.Len(t, m.states.idle, 1)

	limit := int64(40 * one.work * 4) // four plans of 40 rows
	m.states.mu.Lock()
	m.states.cap = func() int64 { return limit }
	m.states.mu.Unlock()
	var last *Plan
	for rows := 1; rows <= 40; rows++ {
		last = run(rows)
		assert.LessOrEqual(t, m.states.bytes, limit, "%d rows", rows)
	}
	assert.Positive(t, m.states.dropped)
	var sum int64
	for _, e := range m.states.idle {
		sum += int64(len(e.st.ws))
	}
	assert.Equal(t, m.states.bytes, sum, "the count is the states'")
	if assert.NotEmpty(t, m.states.idle) {
		assert.Same(t, last, m.states.idle[len(m.states.idle)-1].p, "the last run's state is kept")
	}
}

// reluAdd is y = Relu(x) + x, x float32[N x 64]: Relu's output is in the
// run's workspace.
func reluAdd(t *testing.T) *Model {
	f := int32(nd.Float32)
	val := func(name string) *onnxpb.ValueInfoProto {
		n, batch := int64(64), "N"
		shape := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
			{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: batch}},
			{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: n}}}}
		return &onnxpb.ValueInfoProto{Name: &name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: &f, Shape: shape}}}}
	}
	node := func(op string, in ...string) *onnxpb.NodeProto {
		out := "r"
		if op == "Add" {
			out = "y"
		}
		return &onnxpb.NodeProto{OpType: &op, Input: in, Output: []string{out}}
	}
	ir, v, name := int64(8), int64(17), "relu_add"
	data, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: &ir, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: &v}},
		Graph: &onnxpb.GraphProto{Name: &name, Node: []*onnxpb.NodeProto{node("Relu", "x"), node("Add", "r", "x")},
			Input: []*onnxpb.ValueInfoProto{val("x")}, Output: []*onnxpb.ValueInfoProto{val("y")}}})
	require.NoError(t, err)
	m, err := Parse(data, "relu_add.onnx")
	require.NoError(t, err)
	return m
}

// Inputs that do not fit a plan are refused before its run takes a state:
// under a budget smaller than the workspace the error is the input's,
// and no workspace is made.
func TestBadInputsMakeNoWorkspace(t *testing.T) {
	m := reluAdd(t)
	p, err := m.Plan([]nd.Array{nd.Zeros(nd.Float32, 8, 64)})
	require.NoError(t, err)
	require.Positive(t, p.work)
	mem, err := newMemory(16)
	require.NoError(t, err)
	_, err = p.run([]nd.Array{nd.Zeros(nd.Float32, 8, 63)}, nil, mem)
	require.ErrorContains(t, err, `input "x" is float32[8x63], the plan is for float32[8x64]`)
	assert.Zero(t, mem.held, "no workspace made")
	assert.Empty(t, m.states.idle)
}
