package onnx_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu/gpuemu"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/internal/kernelemu"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The device plan and the operators' launches, run without a GPU: the
// device emulator (gpuemu: host memory as device memory, guarded and
// poisoned, asynchronous copies, products in float64) with the kernels of
// kernels.cu compiled for the host (internal/kernelemu).

func emulator(t testing.TB) *gpuemu.Device {
	t.Helper()
	if !kernelemu.Available {
		t.Skip("the kernel emulator needs cgo")
	}
	return gpuemu.New(map[*gpu.Module]gpuemu.KernelFunc{onnx.Module: kernelemu.Launch})
}

// runOnDevice runs m on inputs through the emulated device and returns the
// outputs (copied out of the call's memory) and the steps that ran on the
// host.
func runOnDevice(dev *gpuemu.Device, m *onnx.Model, in []nd.Array) ([]nd.Array, []string, error) {
	p, err := m.Plan(in)
	if err != nil {
		return nil, nil, err
	}
	var outs []nd.Array
	var run onnx.DeviceRun
	err = dev.Launch(func(c gpu.Call) error {
		var err error
		outs, run, err = p.RunDevice(c, in)
		return err
	})
	for i := range outs {
		outs[i] = outs[i].Clone()
	}
	return outs, run.OnHost, err
}

// requireDeviceAsCPU runs model mp on feed on the device (the emulator)
// and on the CPU and requires no node on the host and each value of the
// device's first output within tol (relative, and absolute near 0) of the
// CPU's: NaN where the CPU's is NaN.
func requireDeviceAsCPU(t *testing.T, dev *gpuemu.Device, mp *onnxpb.ModelProto, feed []nd.Array, tol float64, what string) {
	t.Helper()
	model, err := onnxtest.Load(mp)
	require.NoError(t, err, what)
	want, err := model.Run(feed)
	require.NoError(t, err, what)
	got, onHost, err := runOnDevice(dev, model, feed)
	require.NoError(t, err, what)
	require.Empty(t, onHost, what)
	w := nd.MustAs[float32](want[0])
	for j, v := range nd.MustAs[float32](got[0]) {
		if math.IsNaN(float64(w[j])) {
			require.True(t, math.IsNaN(float64(v)), "%s: element %d", what, j)
			continue
		}
		require.InDelta(t, w[j], v, tol*(1+math.Abs(float64(w[j]))), "%s: element %d", what, j)
	}
}

func TestKernelEmulatorServesEveryKernel(t *testing.T) {
	if !kernelemu.Available {
		t.Skip("the kernel emulator needs cgo")
	}
	var entries []string
	for _, line := range strings.Split(string(onnx.PTX), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == ".visible" && f[1] == ".entry" {
			entries = append(entries, strings.TrimSuffix(f[2], "("))
		}
	}
	names := kernelemu.Names()
	sort.Strings(entries)
	sort.Strings(names)
	assert.Equal(t, entries, names, "kernels.ptx's entries and the emulator's list (internal/kernelemu/kernelemu.cpp)")
}

// deviceBoard counts, per operator, the conformance tests that passed on
// the device wholly (Device) and with a node on the host (Host).
type deviceBoard struct {
	Device, Host map[string]int
	HostIn       map[string]map[string]bool // per operator, the tests where its node ran on the host
	HostOnly     map[string]bool            // the operators none of whose nodes has device code (onnx.HostOnlyOps)
	Passed, Run  int
	Failed       []string
}

// deviceConformance runs ONNX's conformance tests (those the CPU runs)
// through the device plan on the emulated device.
func deviceConformance(t testing.TB) *deviceBoard {
	dev := emulator(t)
	tests, _ := onnxtest.ConformanceTests(t)
	b := &deviceBoard{Device: map[string]int{}, Host: map[string]int{}, HostIn: map[string]map[string]bool{}, HostOnly: map[string]bool{}}
	for _, c := range tests {
		if _, ok := onnxtest.Skips[c.ID()]; ok {
			continue
		}
		var onHost []string
		err := onnxtest.RunConformance(t, c, func(m *onnx.Model, in []nd.Array) ([]nd.Array, error) {
			for op, host := range onnx.HostOnlyOps(m) {
				prev, seen := b.HostOnly[op]
				b.HostOnly[op] = host && (prev || !seen) // every node of the operator's
			}
			outs, host, err := runOnDevice(dev, m, in)
			onHost = append(onHost, host...)
			return outs, err
		})
		b.Run++
		if err != nil {
			b.Failed = append(b.Failed, fmt.Sprintf("%s: %v", c.ID(), err))
			continue
		}
		b.Passed++
		for _, op := range c.Ops {
			if len(onHost) == 0 {
				b.Device[op]++
			} else {
				b.Host[op]++
			}
		}
		for _, s := range onHost {
			op, _, _ := strings.Cut(s, " ")
			if b.HostIn[op] == nil {
				b.HostIn[op] = map[string]bool{}
			}
			b.HostIn[op][c.Name] = true
		}
	}
	return b
}

func (b *deviceBoard) String() string {
	var s strings.Builder
	ops := make([]string, 0, len(b.Device)+len(b.Host))
	for op := range b.Device {
		ops = append(ops, op)
	}
	for op := range b.Host {
		if b.Device[op] == 0 {
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	for _, op := range ops {
		fmt.Fprintf(&s, "  %-20s %3d wholly on the device, %3d with a node on the host", op, b.Device[op], b.Host[op])
		if in := b.HostIn[op]; len(in) > 0 {
			list := make([]string, 0, len(in))
			for n := range in {
				list = append(list, n)
			}
			sort.Strings(list)
			fmt.Fprintf(&s, " (its node: %s)", strings.Join(list, " "))
		}
		s.WriteByte('\n')
	}
	return s.String()
}

// TestDeviceConformance runs ONNX's conformance tests through the device
// plan: every test that passes on the CPU must pass on the device; the
// board says, per operator, how many ran wholly on the device and how many
// had a node on the host (a type the kernels do not take).
func TestDeviceConformance(t *testing.T) {
	b := deviceConformance(t)
	t.Logf("ONNX conformance on the emulated device: %d passed of %d run\n%s", b.Passed, b.Run, b)
	for _, f := range b.Failed {
		t.Error(f)
	}
}

// TestDeviceModels runs the exported models and the Fashion CNN on the
// emulated device: wholly on it (no node on the host), outputs equal to
// ONNX Runtime's, the weights uploaded once for several calls.
func TestDeviceModels(t *testing.T) {
	dev := emulator(t)
	for _, tm := range testModels(t) {
		t.Run(tm.Name, func(t *testing.T) {
			m, err := onnxtest.LoadFile(tm.Model)
			require.NoError(t, err)
			in, want := onnxtest.ReadTensor(t, tm.Input), onnxtest.ReadTensor(t, tm.Output)
			for _, n := range []int{in.Shape[0], 3} {
				dev.ResetStats()
				got, onHost, err := runOnDevice(dev, m, []nd.Array{repeatRows(in, n)})
				require.NoError(t, err, "batch %d", n)
				assert.Empty(t, onHost, "nodes on the host, batch %d", n)
				assert.Positive(t, dev.Stats().Launches, "kernels launched")
				if err := compareOutput(got[0], repeatRows(want, n), nil); err != nil {
					t.Errorf("batch %d, output %q: %v", n, m.Outputs[0].Name, err)
				}
				if n == 3 { // the weights stay on the device: a second plan uploads its input and constants only
					st := dev.Stats()
					assert.Less(t, st.UploadBytes, m.SizeBytes()/2+int64(len(repeatRows(in, n).Data)), "bytes uploaded for batch %d", n)
				}
			}
		})
	}
}

// An index out of range on the device (a kernel cannot return an error)
// is reported after the run as ErrIndexRange, for the caller to run the
// batch on the CPU (onnxstep.LaunchRun does); a good batch's outputs come
// from the device.
func TestRunDeviceGatherOutOfRange(t *testing.T) {
	dev := emulator(t)
	m, err := onnxtest.Load(onnxtest.Model(13,
		[]*onnxpb.NodeProto{onnxtest.Node("Gather", []string{"table", "ids"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("ids", nd.Int64, -1)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 2)},
		onnxtest.Init("table", nd.Of([]float32{1, 2, 3, 4, 5, 6}, 3, 2))))
	require.NoError(t, err)
	out, _, err := runOnDevice(dev, m, []nd.Array{nd.Of([]int64{2, -3, 1}, 3)})
	require.NoError(t, err)
	assert.Equal(t, []float32{5, 6, 1, 2, 3, 4}, nd.MustAs[float32](out[0]))
	assert.Positive(t, dev.Stats().Kernels["transforms/onnx.gather"])
	_, _, err = runOnDevice(dev, m, []nd.Array{nd.Of([]int64{0, 3}, 2)})
	require.ErrorIs(t, err, onnx.ErrIndexRange)
}

// A plan whose nodes run on the host says so once, as a warning of
// log/slog naming the model, the inputs and the nodes.
func TestRunDeviceWarnsOfHostNodes(t *testing.T) {
	dev := emulator(t)
	m, err := onnxtest.Load(onnxtest.Model(13,
		[]*onnxpb.NodeProto{onnxtest.Node("Div", []string{"a", "b"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("a", nd.Int64, 2), onnxtest.Value("b", nd.Int64, 2)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Int64, 2)}))
	require.NoError(t, err)
	var logged []slog.Record
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(recordHandler{&logged}))
	in := []nd.Array{nd.Of([]int64{7, -7}), nd.Of([]int64{2, 0})}
	for range 2 {
		out, onHost, err := runOnDevice(dev, m, in)
		require.NoError(t, err)
		assert.Equal(t, []int64{3, 0}, nd.MustAs[int64](out[0]))
		assert.Len(t, onHost, 1, "integer Div runs on the host")
	}
	require.Len(t, logged, 1, "once per plan")
	r := logged[0]
	assert.Equal(t, slog.LevelWarn, r.Level)
	attrs := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	assert.Equal(t, map[string]any{"model": "test.onnx", "inputs": "int64[2], int64[2]", "nodes": []string{"Div Div_[y]"}}, attrs)
}

// recordHandler keeps the records it handles.
type recordHandler struct{ records *[]slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	*h.records = append(*h.records, r)
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// The Fashion-MNIST CNN on the emulated device: wholly on it, the same
// classes as the CPU for 100 test images and logits within the step's
// tolerance.
func TestDeviceFashionCNN(t *testing.T) {
	dev := emulator(t)
	m, err := onnxtest.LoadFile(fashionCNN)
	require.NoError(t, err)
	images, err := tensor.ReadImagesSize(filepath.Join(fashionDir, "t10k-images-idx3-ubyte.gz"), 28, 28)
	require.NoError(t, err)
	const rows = 100
	x := nd.Zeros(nd.Float32, rows, 1, 28, 28)
	xs := nd.MustAs[float32](x)
	for i, v := range images.X[:rows*784] {
		xs[i] = v / 255
	}
	cpu, err := m.Run([]nd.Array{x})
	require.NoError(t, err)
	got, onHost, err := runOnDevice(dev, m, []nd.Array{x})
	require.NoError(t, err)
	assert.Empty(t, onHost)
	require.NoError(t, onnx.CompareOutputs(cpu, got))
	cl, gl := nd.Float64s(cpu[0]), nd.Float64s(got[0])
	for r := range rows {
		assert.Equal(t, argmax(cl[r*10:(r+1)*10]), argmax(gl[r*10:(r+1)*10]), "image %d", r)
	}
}
