package onnx_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"sync"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Data-dependent shapes: a plan ends at a node whose outputs' shapes come
// from what the run computes (NonZero, NonMaxSuppression) or at a node that
// needs the contents of a computed value (TopK's k); the run goes on with a
// plan of the rest made for the shapes it met.

// positives is a model that gathers x's positive elements (by NonZero of
// Greater), doubles them and sums them; r, made before the NonZero, is an
// output too (it crosses the plans).
func positives(t *testing.T) *onnx.Model {
	t.Helper()
	m, err := onnxtest.Load(onnxtest.Model(13, nodes{
		onnxtest.Node("Relu", []string{"x"}, []string{"r"}),
		onnxtest.Node("Greater", []string{"x", "zero"}, []string{"pos"}),
		onnxtest.Node("NonZero", []string{"pos"}, []string{"nz"}),
		onnxtest.Node("Transpose", []string{"nz"}, []string{"idx"}),
		onnxtest.Node("GatherND", []string{"x", "idx"}, []string{"g"}),
		onnxtest.Node("Add", []string{"g", "g"}, []string{"y"}),
		onnxtest.Node("ReduceSum", []string{"y"}, []string{"s"}, onnxtest.Int("keepdims", 0)),
	}, values{onnxtest.Value("x", nd.Float32, 3, 5)},
		values{onnxtest.ValueNoShape("y", nd.Float32), onnxtest.ValueNoShape("s", nd.Float32), onnxtest.Value("r", nd.Float32, 3, 5)},
		onnxtest.Init("zero", nd.Of([]float32{0}))))
	require.NoError(t, err)
	return m
}

// positivesWant is positives' outputs computed plainly.
func positivesWant(x []float32) (y []float32, s float32, r []float32) {
	y = []float32{}
	for _, v := range x {
		if v > 0 {
			y = append(y, 2*v)
			s += 2 * v
		}
		r = append(r, max(v, 0))
	}
	return y, s, r
}

func randomSigned(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		if rng.Intn(3) > 0 {
			x[i] = float32(rng.Intn(200)-100) / 8
		}
	}
	return x
}

// A NonZero of a value the model computes: the count differs run to run,
// and each run gives the plain loop's outputs; a count met again reuses
// its plan.
func TestDataShapedNonZero(t *testing.T) {
	m := positives(t)
	checkPositives(t, func(in []nd.Array) ([]nd.Array, error) { return m.Run(in) })
}

// The same on the emulated device: the plan's steps run there, NonZero on
// the host between the plans (DeviceRun.Between names it), the rest on the
// device again.
func TestDataShapedNonZeroOnDevice(t *testing.T) {
	dev := emulator(t)
	m := positives(t)
	checkPositives(t, func(in []nd.Array) ([]nd.Array, error) {
		p, err := m.Plan(in)
		require.NoError(t, err)
		var out []nd.Array
		var run onnx.DeviceRun
		err = dev.Launch(func(c gpu.Call) error {
			var err error
			out, run, err = p.RunDevice(c, in)
			for i := range out {
				out[i] = out[i].Clone()
			}
			return err
		})
		assert.Empty(t, run.OnHost)
		assert.Equal(t, []string{"NonZero NonZero_[nz]"}, run.Between)
		return out, err
	})
}

func checkPositives(t *testing.T, run func([]nd.Array) ([]nd.Array, error)) {
	rng := rand.New(rand.NewSource(1))
	counts := map[int]bool{}
	for i := 0; i < 40; i++ {
		x := randomSigned(rng, 15)
		if i == 0 {
			x = make([]float32, 15) // none: a [2x0] NonZero, empty gathers
		}
		y, s, r := positivesWant(x)
		counts[len(y)] = true
		out, err := run([]nd.Array{nd.Of(x, 3, 5)})
		require.NoError(t, err, "run %d", i)
		assert.Equal(t, []int{len(y)}, out[0].Shape, "run %d", i)
		assert.Equal(t, y, nd.MustAs[float32](out[0]), "run %d", i)
		assert.Equal(t, []float32{s}, nd.MustAs[float32](out[1]), "run %d", i)
		assert.Equal(t, r, nd.MustAs[float32](out[2]), "run %d", i)
	}
	require.Greater(t, len(counts), 3, "the runs' counts should differ")
}

// Runs from many goroutines at once, each with its own count, each get
// their own outputs (the plans of the rest are shared, their runs not).
func TestDataShapedConcurrent(t *testing.T) {
	m := positives(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 50; i++ {
				x := randomSigned(rng, 15)
				y, s, _ := positivesWant(x)
				out, err := m.Run([]nd.Array{nd.Of(x, 3, 5)})
				if err == nil && (!assert.ObjectsAreEqual(y, nd.MustAs[float32](out[0])) || nd.MustAs[float32](out[1])[0] != s) {
					err = fmt.Errorf("goroutine %d run %d: got %v %v, want %v %v", g, i, out[0], out[1], y, s)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// detector is a detector's post-processing: scores computed from the input
// (a sigmoid of the logits), NonMaxSuppression, then the kept boxes
// gathered by index: its output's rows are the boxes kept.
func detector(t *testing.T) *onnx.Model {
	t.Helper()
	m, err := onnxtest.Load(onnxtest.Model(13, nodes{
		onnxtest.Node("Sigmoid", []string{"logits"}, []string{"scores"}),
		onnxtest.Node("NonMaxSuppression", []string{"boxes", "scores", "max", "iou", "thr"}, []string{"sel"}),
		onnxtest.Node("Gather", []string{"sel", "two"}, []string{"box"}, onnxtest.Int("axis", 1)),
		onnxtest.Node("Squeeze", []string{"boxes", "zeroAxis"}, []string{"boxes1"}),
		onnxtest.Node("Gather", []string{"boxes1", "box"}, []string{"kept"}, onnxtest.Int("axis", 0)),
	}, values{onnxtest.Value("boxes", nd.Float32, 1, 200, 4), onnxtest.Value("logits", nd.Float32, 1, 1, 200)},
		values{onnxtest.ValueNoShape("kept", nd.Float32), onnxtest.ValueNoShape("sel", nd.Int64)},
		onnxtest.Init("max", nd.Of([]int64{100}, 1)), onnxtest.Init("iou", nd.Of([]float32{0.5}, 1)),
		onnxtest.Init("thr", nd.Of([]float32{0.8}, 1)), onnxtest.Init("two", nd.Scalar(int64(2))),
		onnxtest.Init("zeroAxis", nd.Of([]int64{0}, 1))))
	require.NoError(t, err)
	return m
}

// A detector's NonMaxSuppression of computed scores: the boxes kept differ
// in number run to run, and equal a plain greedy selection, on the CPU and
// on the emulated device.
func TestDataShapedNMS(t *testing.T) {
	m := detector(t)
	checkDetector(t, func(in []nd.Array) ([]nd.Array, error) { return m.Run(in) })
	dev := emulator(t)
	checkDetector(t, func(in []nd.Array) ([]nd.Array, error) {
		out, _, err := runOnDevice(dev, m, in)
		return out, err
	})
}

func checkDetector(t *testing.T, run func([]nd.Array) ([]nd.Array, error)) {
	rng := rand.New(rand.NewSource(2))
	kept := map[int]bool{}
	for i := 0; i < 10; i++ {
		boxes := make([]float32, 200*4)
		for b := 0; b < 200; b++ {
			y, x := rng.Float32()*100, rng.Float32()*100
			copy(boxes[b*4:], []float32{y, x, y + 5 + rng.Float32()*20, x + 5 + rng.Float32()*20})
		}
		logits := make([]float32, 200)
		for b := range logits {
			logits[b] = float32(rng.NormFloat64())
		}
		want := greedyNMS(boxes, logits, 100, 0.5, 0.8)
		kept[len(want)] = true
		out, err := run([]nd.Array{nd.Of(boxes, 1, 200, 4), nd.Of(logits, 1, 1, 200)})
		require.NoError(t, err)
		require.Equal(t, []int{len(want), 4}, out[0].Shape)
		got := nd.MustAs[float32](out[0])
		for k, b := range want {
			assert.Equal(t, boxes[b*4:b*4+4], got[k*4:k*4+4], "run %d, box %d", i, k)
		}
	}
	require.Greater(t, len(kept), 2, "the runs' numbers of boxes kept should differ")
}

// greedyNMS is NonMaxSuppression's selection for one image and class, plainly.
func greedyNMS(boxes, logits []float32, maxOut int, iou, thr float32) []int {
	var order []int
	score := func(b int) float32 { return 1 / (1 + float32(math.Exp(-float64(logits[b])))) }
	for b := range logits {
		if score(b) > thr {
			order = append(order, b)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return score(order[a]) > score(order[b]) })
	var kept []int
	for _, b := range order {
		if len(kept) == maxOut {
			break
		}
		ok := true
		for _, k := range kept {
			if boxIoU(boxes[b*4:], boxes[k*4:]) > iou {
				ok = false
				break
			}
		}
		if ok {
			kept = append(kept, b)
		}
	}
	return kept
}

func boxIoU(a, b []float32) float32 {
	ih := min(a[2], b[2]) - max(a[0], b[0])
	iw := min(a[3], b[3]) - max(a[1], b[1])
	if ih <= 0 || iw <= 0 {
		return 0
	}
	inter := ih * iw
	return inter / ((a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter)
}

// TopK whose k the model computes (the number of positive scores, at most
// 4): the plan ends at TopK, and the rest is planned for k's value.
func TestDataShapedComputedK(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(13, nodes{
		onnxtest.Node("Greater", []string{"x", "zero"}, []string{"pos"}),
		onnxtest.Node("Cast", []string{"pos"}, []string{"posi"}, onnxtest.Int("to", 7)),
		onnxtest.Node("ReduceSum", []string{"posi"}, []string{"n"}, onnxtest.Int("keepdims", 1)),
		onnxtest.Node("Min", []string{"n", "four"}, []string{"k"}),
		onnxtest.Node("TopK", []string{"x", "k"}, []string{"v", "i"}),
	}, values{onnxtest.Value("x", nd.Float32, 8)},
		values{onnxtest.ValueNoShape("v", nd.Float32), onnxtest.ValueNoShape("i", nd.Int64)},
		onnxtest.Init("zero", nd.Of([]float32{0})), onnxtest.Init("four", nd.Of([]int64{4}, 1))))
	require.NoError(t, err)
	for _, c := range []struct{ x, want []float32 }{
		{[]float32{-1, 3, -2, 5, -3, 0, -4, -5}, []float32{5, 3}},
		{[]float32{1, 2, 3, 4, 5, 6, 7, 8}, []float32{8, 7, 6, 5}},
		{[]float32{-1, -2, -3, -4, -5, -6, -7, 9}, []float32{9}},
		{[]float32{-1, 3, -2, 5, -3, 0, -4, -5}, []float32{5, 3}},
	} {
		out, err := m.Run([]nd.Array{nd.Of(c.x, 8)})
		require.NoError(t, err)
		assert.Equal(t, c.want, nd.MustAs[float32](out[0]), "x %v", c.x)
	}
}

// The outputs a data-shaped node makes count against the run's memory
// budget: over it, the run fails with a MemoryError naming the node.
func TestDataShapedMemoryBudget(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(13, nodes{
		onnxtest.Node("Abs", []string{"x"}, []string{"a"}),
		onnxtest.Node("NonZero", []string{"a"}, []string{"nz"}),
	}, values{onnxtest.Value("x", nd.Float32, 1<<16)}, values{onnxtest.ValueNoShape("nz", nd.Int64)}))
	require.NoError(t, err)
	x := nd.Zeros(nd.Float32, 1<<16)
	for i := range nd.MustAs[float32](x) {
		nd.MustAs[float32](x)[i] = 1
	}
	_, err = m.RunWith([]nd.Array{x}, onnx.RunOptions{MemoryBudget: 600 << 10})
	var me *onnx.MemoryError
	require.True(t, errors.As(err, &me), "%v", err)
	assert.Contains(t, me.Node, "NonZero")
	out, err := m.RunWith([]nd.Array{x}, onnx.RunOptions{MemoryBudget: 2 << 20})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1 << 16}, out[0].Shape)
}
