package onnx_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chainModel is a chain of n nodes over x (float32[N x 4]): Relu, Identity
// and Add of x, in turn, as an exporter unrolls a loop.
func chainModel(n int) []byte {
	ops := []string{"Relu", "Identity", "Add"}
	ns := make(nodes, n)
	prev := "x"
	for i := range ns {
		out := fmt.Sprintf("v%d", i)
		if i == n-1 {
			out = "y"
		}
		in := []string{prev}
		if ops[i%3] == "Add" {
			in = append(in, "x")
		}
		ns[i] = onnxtest.Node(ops[i%3], in, []string{out})
		prev = out
	}
	return onnxtest.Bytes(onnxtest.Model(17, ns, values{onnxtest.Value("x", nd.Float32, -1, 4)},
		values{onnxtest.Value("y", nd.Float32, -1, 4)}))
}

// chainWant is what chainModel(n) computes from x: each Add adds x to the
// Relu of what came before.
func chainWant(n int, x []float32) []float32 {
	out := append([]float32{}, x...)
	for i := range n {
		for j, v := range out {
			switch i % 3 {
			case 0:
				out[j] = max(v, 0)
			case 2:
				out[j] = v + x[j]
			}
		}
	}
	return out
}

// A chain of 100,000 nodes loads, plans and runs in seconds: the planner's
// placement looks at a few lifetimes per step, not at every value placed
// before (it took 285 s, most of it placing, once per batch size). The
// count is the test; the time bound is generous, for a busy machine.
func TestChainOf100000Nodes(t *testing.T) {
	const n = 100_000
	data := chainModel(n)
	start := time.Now()
	m, err := onnx.Parse(data, "chain.onnx")
	require.NoError(t, err)
	x := nd.Of([]float32{-1, 0.5, 2, -3, 1, -2, 0, 4}, 2, 4)
	p, err := m.Plan([]nd.Array{x})
	require.NoError(t, err)
	steps := onnx.PlanSteps(p)
	assert.Greater(t, steps, n/2, "the Relus and Adds are steps")
	assert.LessOrEqual(t, onnx.PlacementWork(p), 4*steps, "lifetimes looked at while placing %d steps", steps)
	out, err := m.Run([]nd.Array{x})
	require.NoError(t, err)
	assert.Equal(t, chainWant(n, nd.MustAs[float32](x)), nd.MustAs[float32](out[0]))
	took := time.Since(start)
	t.Logf("%d nodes: load, plan and run in %v", n, took)
	assert.Less(t, took, time.Minute)
}

// BenchmarkChain loads, plans and runs chains of 10,000 and 100,000 nodes:
// the time per node is about the same (linear in the nodes).
func BenchmarkChain(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		data := chainModel(n)
		x := nd.Of([]float32{-1, 0.5, 2, -3}, 1, 4)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				m, err := onnx.Parse(data, "chain.onnx")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := m.Run([]nd.Array{x}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// A chain of 100,000 MatMuls (each a fusion head, whose readers the
// fusion looks up) plans in seconds: the readers of every value are listed
// once per plan, not searched for per step (a search per step took 19 s
// for 40,000 and grew as the square). The time bound is generous, for a
// busy machine; 100,000 took about half a second.
func TestMatMulChainFusesInLinearTime(t *testing.T) {
	const n = 100_000
	ns := make(nodes, n)
	prev := "x"
	for i := range ns {
		out := fmt.Sprintf("v%d", i)
		if i == n-1 {
			out = "y"
		}
		ns[i] = onnxtest.Node("MatMul", []string{prev, "w"}, []string{out})
		prev = out
	}
	w := make([]float32, 16)
	for i := range 4 {
		w[i*5] = 1 // the identity: y = x
	}
	m, err := onnx.Parse(onnxtest.Bytes(onnxtest.Model(17, ns, values{onnxtest.Value("x", nd.Float32, -1, 4)},
		values{onnxtest.Value("y", nd.Float32, -1, 4)}, onnxtest.Init("w", nd.Of(w, 4, 4)))), "chain.onnx")
	require.NoError(t, err)
	x := nd.Of([]float32{1, -2, 3, 4}, 1, 4)
	start := time.Now()
	p, err := m.Plan([]nd.Array{x})
	require.NoError(t, err)
	took := time.Since(start)
	t.Logf("%d MatMuls planned in %v", n, took)
	assert.Less(t, took, time.Minute)
	out, err := p.Run([]nd.Array{x})
	require.NoError(t, err)
	assert.Equal(t, nd.MustAs[float32](x), nd.MustAs[float32](out[0]))
}
