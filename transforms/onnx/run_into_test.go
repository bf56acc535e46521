package onnx_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocThreads are the GOMAXPROCS the allocation tests run at: one
// thread, and several (the products and the convolutions then share their
// work between goroutines).
var allocThreads = []int{1, 2, 4}

// allocFree are the test models whose runs into the caller's outputs are
// held to no allocation. Still allocating at each run: the U-Net's Resize
// (its plan and tables, 51 objects), and in the opset-14 transformer the
// operators of its LayerNormalization written out (Pow, Sqrt: the unary
// operators' loops).
var allocFree = map[string]bool{
	"resnet-opset14": true, "resnet-opset17": true,
	"mobilenetv2-opset14": true, "mobilenetv2-opset17": true,
	"transformer-opset17": true,
}

// newOutputs returns zeroed arrays for the plan's outputs, of the model's
// declared types.
func newOutputs(m *onnx.Model, p *onnx.Plan) []nd.Array {
	outs := make([]nd.Array, len(m.Outputs))
	metas, err := p.OutputMeta()
	if err != nil {
		panic(err)
	}
	for i, meta := range metas {
		outs[i] = nd.Zeros(m.Outputs[i].Type, meta.Shape...)
	}
	return outs
}

// A run of a test model into the caller's outputs writes the bits Run
// returns, and allocates nothing after the plan's first (allocFree's
// models), at one thread and at several.
func TestRunIntoAllocs(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes sync.Pool drop what it holds: allocations are counted without it")
	}
	defer onnx.SetLayoutPoolBytes(onnx.SetLayoutPoolBytes(0)) // the stems' convolutions pool their outputs however small
	for _, tm := range testModels(t) {
		m, err := onnxtest.LoadFile(tm.Model)
		require.NoError(t, err)
		in := onnxtest.ReadTensor(t, tm.Input)
		for _, batch := range []int{in.Shape[0], 8} {
			ins := []nd.Array{repeatRows(in, batch)}
			for _, procs := range allocThreads {
				t.Run(fmt.Sprintf("%s/b%d/procs%d", tm.Name, batch, procs), func(t *testing.T) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					p, err := m.Plan(ins)
					require.NoError(t, err)
					want, err := p.Run(ins)
					require.NoError(t, err)
					outs := newOutputs(m, p)
					require.NoError(t, p.RunInto(ins, outs))
					for i := range want {
						assert.Equal(t, want[i], outs[i], "output %d: RunInto's is Run's", i)
					}
					allocs := testing.AllocsPerRun(3, func() {
						if err := p.RunInto(ins, outs); err != nil {
							t.Fatal(err)
						}
					})
					if allocFree[tm.Name] {
						assert.Zero(t, allocs, "allocations a run")
					} else {
						t.Logf("%v allocations a run (not yet held to none)", allocs)
					}
				})
			}
		}
	}
}

// RunInto refuses outputs of the wrong number, type or shape, naming the
// output, and writes nothing.
func TestRunIntoBadOutputs(t *testing.T) {
	m, err := onnxtest.LoadFile(filepath.Join(modelsDir, "resnet-opset17.onnx"))
	require.NoError(t, err)
	ins := []nd.Array{onnxtest.ReadTensor(t, filepath.Join(modelsDir, "resnet.input.pb"))}
	p, err := m.Plan(ins)
	require.NoError(t, err)
	good := newOutputs(m, p)
	name := m.Outputs[0].Name
	shape := good[0].Shape

	require.ErrorContains(t, p.RunInto(ins, nil), "0 outputs for a model of 1")
	require.ErrorContains(t, p.RunInto(ins, append(good, good[0])), "2 outputs for a model of 1")
	wrongShape := nd.Zeros(nd.Float32, shape[0]+1, shape[1])
	require.ErrorContains(t, p.RunInto(ins, []nd.Array{wrongShape}), fmt.Sprintf("output %q is float32[%dx%d], the plan's is float32%s", name, shape[0]+1, shape[1], nd.ShapeString(shape)))
	wrongType := nd.Zeros(nd.Float64, shape...)
	require.ErrorContains(t, p.RunInto(ins, []nd.Array{wrongType}), fmt.Sprintf("output %q is float64", name))
	short := nd.Array{Type: nd.Float32, Shape: shape, Data: make([]byte, 4)}
	require.ErrorContains(t, p.RunInto(ins, []nd.Array{short}), fmt.Sprintf("output %q: float32", name))
	require.ErrorContains(t, p.RunInto(nil, good), "0 inputs for a model of 1")
	assert.Equal(t, nd.Zeros(nd.Float32, shape...), good[0], "nothing written")
}

// BenchmarkRunInto runs each opset-17 test model at batch 8 into the same
// outputs (-benchmem reports its allocations a run: none).
func BenchmarkRunInto(b *testing.B) {
	for _, tm := range testModels(b) {
		if !strings.HasSuffix(tm.Name, "-opset17") {
			continue
		}
		b.Run(tm.Name, func(b *testing.B) {
			m, err := onnxtest.LoadFile(tm.Model)
			require.NoError(b, err)
			ins := []nd.Array{repeatRows(onnxtest.ReadTensor(b, tm.Input), 8)}
			p, err := m.Plan(ins)
			require.NoError(b, err)
			outs := newOutputs(m, p)
			require.NoError(b, p.RunInto(ins, outs))
			b.ReportAllocs()
			for b.Loop() {
				if err := p.RunInto(ins, outs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Runs of one plan on several goroutines at once, each into its own
// outputs, give Run's bits: the run states, the kernels' kept shapes and
// pooled loops are safe to share.
func TestRunIntoConcurrent(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, name := range []string{"transformer-opset17", "mobilenetv2-opset17", "unet-opset17"} {
		m, err := onnxtest.LoadFile(filepath.Join(modelsDir, name+".onnx"))
		require.NoError(t, err)
		in := onnxtest.ReadTensor(t, filepath.Join(modelsDir, strings.SplitN(name, "-", 2)[0]+".input.pb"))
		ins := []nd.Array{repeatRows(in, 2)}
		p, err := m.Plan(ins)
		require.NoError(t, err)
		want, err := p.Run(ins)
		require.NoError(t, err)
		var wg sync.WaitGroup
		outs := make([][]nd.Array, 4)
		for g := range outs {
			outs[g] = newOutputs(m, p)
			wg.Go(func() {
				for range 3 {
					assert.NoError(t, p.RunInto(ins, outs[g]))
				}
			})
		}
		wg.Wait()
		for g := range outs {
			assert.Equal(t, want, outs[g], "%s: goroutine %d", name, g)
		}
	}
}

// RunInto writes every kind of output as Run returns it: one a step
// computes, one narrowed to the Float16 the model declares, the input
// itself (Identity's view), a constant, and a value listed twice.
func TestRunIntoOutputKinds(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(17,
		[]*onnxpb.NodeProto{
			onnxtest.Node("Relu", []string{"x"}, []string{"r"}),
			onnxtest.Node("Cast", []string{"r"}, []string{"h"}, onnxtest.Int("to", int64(onnxpb.TensorProto_FLOAT16))),
			onnxtest.Node("Identity", []string{"x"}, []string{"i"}),
			onnxtest.Node("Identity", []string{"c"}, []string{"k"}),
		},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, 2, 3)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("r", nd.Float32, 2, 3), onnxtest.Value("h", nd.Float16, 2, 3),
			onnxtest.Value("i", nd.Float32, 2, 3), onnxtest.Value("k", nd.Float32, 2), onnxtest.Value("r", nd.Float32, 2, 3)},
		onnxtest.Init("c", nd.Of([]float32{7, 8}, 2))))
	require.NoError(t, err)
	ins := []nd.Array{nd.Of([]float32{-1, 0.1, 2, -3, 4.00001, 5}, 2, 3)}
	p, err := m.Plan(ins)
	require.NoError(t, err)
	want, err := p.Run(ins)
	require.NoError(t, err)
	outs := newOutputs(m, p)
	require.Equal(t, nd.Float16, outs[1].Type)
	for range 2 {
		require.NoError(t, p.RunInto(ins, outs))
		assert.Equal(t, want, outs)
	}
}
