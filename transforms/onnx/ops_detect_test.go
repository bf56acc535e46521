package onnx_test

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The detection operators' bad arguments are errors naming the node and
// the reason: a TopK k past the axis or below 0, an ArgMax over an empty
// axis, a negative Tile count, a Trilu k of two values, a gathered index
// out of range.
func TestDetectionOpsBadInput(t *testing.T) {
	x := nd.Of(make([]float32, 12), 3, 4)
	for name, c := range map[string]struct {
		op   string
		arg  nd.Array // the second input, or the zero Array
		x    nd.Array
		want string
	}{
		"topk past the axis":   {"TopK", nd.Of([]int64{5}, 1), x, `node "topk" (TopK, opset 14): k is 5: TopK takes 0 to the axis's length, 4`},
		"topk negative":        {"TopK", nd.Of([]int64{-1}, 1), x, "k is -1"},
		"argmax empty axis":    {"ArgMax", nd.Array{}, nd.Of([]float32{}, 3, 0), `node "argmax" (ArgMax, opset 14): input data has shape [3x0]: ArgMax over an empty axis 1`},
		"tile negative":        {"Tile", nd.Of([]int64{1, -2}, 2), x, "input repeats has -2 on axis 1"},
		"tile rank":            {"Tile", nd.Of([]int64{2}, 1), x, "Tile of a rank-2 input takes 2 repeats"},
		"gatherelements index": {"GatherElements", nd.Of([]int64{0, 4, 1}, 3, 1), x, `node "gatherelements" (GatherElements, opset 14): index 4 (element 1 of indices) is out of range for axis 0 of size 3`},
		"gathernd index":       {"GatherND", nd.Of([]int64{1, -5}, 1, 2), x, `node "gathernd" (GatherND, opset 14): index -5 (element 1 of indices) is out of range for an axis of size 4`},
		"trilu k values":       {"Trilu", nd.Of([]int64{1, 2}, 2), x, "Trilu takes an int64 scalar"},
	} {
		t.Run(name, func(t *testing.T) {
			in := []string{"x"}
			vals := values{onnxtest.Value("x", nd.Float32, c.x.Shape...)}
			run := []nd.Array{c.x}
			if c.arg.Type != nd.Undefined {
				in = append(in, "a")
				vals = append(vals, onnxtest.Value("a", c.arg.Type, c.arg.Shape...))
				run = append(run, c.arg)
			}
			outs := []string{"y"}
			ov := values{onnxtest.ValueNoShape("y", nd.Float32)}
			if c.op == "TopK" {
				outs = append(outs, "i")
				ov = append(ov, onnxtest.ValueNoShape("i", nd.Int64))
			}
			if c.op == "ArgMax" {
				ov = values{onnxtest.ValueNoShape("y", nd.Int64)}
			}
			n := onnxtest.Node(c.op, in, outs)
			nodeName := strings.ToLower(c.op)
			n.Name = &nodeName
			if c.op == "ArgMax" {
				n.Attribute = append(n.Attribute, onnxtest.Int("axis", 1))
			}
			m, err := onnxtest.Load(onnxtest.Model(14, nodes{n}, vals, ov))
			if err == nil {
				_, err = m.Run(run)
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// TopK and ArgMax put NaN above every number, take the first of equal
// values (ArgMax the last with select_last_index) and keep them in index
// order.
func TestTopKArgMaxOrder(t *testing.T) {
	nan := float32(math.NaN())
	x := nd.Of([]float32{1, 3, nan, 3, -1, nan}, 1, 6)
	m, err := onnxtest.Load(onnxtest.Model(13, nodes{
		onnxtest.Node("TopK", []string{"x", "k"}, []string{"v", "i"}),
		onnxtest.Node("ArgMax", []string{"x"}, []string{"a"}, onnxtest.Int("axis", 1)),
		onnxtest.Node("ArgMax", []string{"x"}, []string{"b"}, onnxtest.Int("axis", 1), onnxtest.Int("select_last_index", 1)),
		onnxtest.Node("ArgMin", []string{"x"}, []string{"c"}, onnxtest.Int("axis", 1)),
	}, values{onnxtest.Value("x", nd.Float32, 1, 6)},
		values{onnxtest.ValueNoShape("i", nd.Int64), onnxtest.ValueNoShape("a", nd.Int64), onnxtest.ValueNoShape("b", nd.Int64), onnxtest.ValueNoShape("c", nd.Int64)},
		onnxtest.Init("k", nd.Of([]int64{4}, 1))))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{x})
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 5, 1, 3}, nd.MustAs[int64](out[0]))
	assert.Equal(t, []int64{2}, nd.MustAs[int64](out[1]))
	assert.Equal(t, []int64{5}, nd.MustAs[int64](out[2]))
	assert.Equal(t, []int64{2}, nd.MustAs[int64](out[3]))
}

// NonZero of a graph input, not known before the run, ends the plan there
// (plan_shaped_test.go has NonZero of computed values).
func TestNonZeroPlanning(t *testing.T) {
	m, err := onnxtest.Load(onnxtest.Model(13, nodes{onnxtest.Node("NonZero", []string{"x"}, []string{"y"})},
		values{onnxtest.Value("x", nd.Float32, 2, 3)}, values{onnxtest.ValueNoShape("y", nd.Int64)}))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of([]float32{0, 2, 0, float32(math.Copysign(0, -1)), 0, -1}, 2, 3)})
	require.NoError(t, err)
	assert.Equal(t, []int{2, 2}, out[0].Shape)
	assert.Equal(t, []int64{0, 1, 1, 2}, nd.MustAs[int64](out[0]))
}

// NonMaxSuppression's work is bounded: millions of boxes, or a worst case
// past the comparisons limit, are refused at once naming the node, not run.
func TestNMSLimits(t *testing.T) {
	n := onnxtest.Node("NonMaxSuppression", []string{"boxes", "scores", "max"}, []string{"sel"})
	name := "nms"
	n.Name = &name
	for _, c := range []struct {
		boxes  int
		maxOut int64
		want   string
	}{
		{2_000_000, 10, `node "nms" (NonMaxSuppression, opset 11): input boxes has 2000000 boxes per image: NonMaxSuppression takes at most 1048576`},
		{100_000, 100_000, "NonMaxSuppression takes at most 10000000000 comparisons (limit 4294967296)"},
	} {
		m, err := onnxtest.Load(onnxtest.Model(11, nodes{n},
			values{onnxtest.Value("boxes", nd.Float32, 1, c.boxes, 4), onnxtest.Value("scores", nd.Float32, 1, 1, c.boxes)},
			values{onnxtest.ValueNoShape("sel", nd.Int64)}, onnxtest.Init("max", nd.Of([]int64{c.maxOut}, 1))))
		require.NoError(t, err)
		_, err = m.Run([]nd.Array{nd.Zeros(nd.Float32, 1, c.boxes, 4), nd.Zeros(nd.Float32, 1, 1, c.boxes)})
		assert.ErrorContains(t, err, c.want)
	}
}

// Einsum's attention-score form equals the plain loops; the implicit
// output is the letters met once; forms outside the set are refused at
// load naming the equation.
func TestEinsumForms(t *testing.T) {
	const b, h, q, k, d = 2, 3, 4, 5, 6
	x, y := make([]float32, b*h*q*d), make([]float32, b*h*k*d)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for i := range y {
		y[i] = float32(i%5)*0.5 - 1
	}
	m, err := onnxtest.Load(onnxtest.Model(12, nodes{
		onnxtest.Node("Einsum", []string{"x", "y"}, []string{"s"}, onnxtest.String("equation", "bhqd, bhkd -> bhqk")),
		onnxtest.Node("Einsum", []string{"x"}, []string{"r"}, onnxtest.String("equation", "bhqd->dq")),
	}, values{onnxtest.Value("x", nd.Float32, b, h, q, d), onnxtest.Value("y", nd.Float32, b, h, k, d)},
		values{onnxtest.ValueNoShape("s", nd.Float32), onnxtest.ValueNoShape("r", nd.Float32)}))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of(x, b, h, q, d), nd.Of(y, b, h, k, d)})
	require.NoError(t, err)
	want := make([]float32, b*h*q*k)
	for bh := range b * h {
		for i := range q {
			for j := range k {
				var s float32
				for c := range d {
					s += x[(bh*q+i)*d+c] * y[(bh*k+j)*d+c]
				}
				want[(bh*q+i)*k+j] = s
			}
		}
	}
	assert.Equal(t, []int{b, h, q, k}, out[0].Shape)
	assert.Equal(t, want, nd.MustAs[float32](out[0]))
	r := nd.MustAs[float32](out[1])
	assert.Equal(t, []int{d, q}, out[1].Shape)
	var s float32
	for bh := range b * h {
		s += x[(bh*q+2)*d+3]
	}
	assert.Equal(t, s, r[3*q+2])

	for eq, want := range map[string]string{
		"...ij->...ji": `attribute equation "...ij->...ji": an ellipsis is not supported`,
		"ii->i":        `attribute equation "ii->i": letter 'i' repeats in operand "ii"`,
		"ij->k":        `output letter 'k' is in no operand`,
	} {
		_, err := onnxtest.Load(onnxtest.Model(12, nodes{onnxtest.Node("Einsum", []string{"x"}, []string{"r"}, onnxtest.String("equation", eq))},
			values{onnxtest.Value("x", nd.Float32, 3, 3)}, values{onnxtest.ValueNoShape("r", nd.Float32)}))
		assert.ErrorContains(t, err, want)
		assert.ErrorContains(t, err, "Einsum")
	}
}

// TopK of a few of a long row (its heap) keeps ties in index order, as
// sorting the whole row does.
func TestTopKHeapTies(t *testing.T) {
	const n, k = 1000, 37
	x := make([]float32, n)
	for i := range x {
		x[i] = float32((i * 7919) % 10)
	}
	m, err := onnxtest.Load(onnxtest.Model(11, nodes{onnxtest.Node("TopK", []string{"x", "k"}, []string{"v", "i"}, onnxtest.Int("largest", 0))},
		values{onnxtest.Value("x", nd.Float32, 1, n)}, values{onnxtest.ValueNoShape("i", nd.Int64)},
		onnxtest.Init("k", nd.Of([]int64{k}, 1))))
	require.NoError(t, err)
	out, err := m.Run([]nd.Array{nd.Of(x, 1, n)})
	require.NoError(t, err)
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(i)
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	assert.Equal(t, idx[:k], nd.MustAs[int64](out[0]))
}

// ScatterElements and ScatterND with opset 18's reductions apply every
// update in order, repeated indices included.
func TestScatterReductions(t *testing.T) {
	data := nd.Of([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	for red, want := range map[string][]float32{
		"none": {1, 9, 3, 4, 5, 6},
		"add":  {1, 2 + 7 + 9, 3, 4, 5, 6},
		"mul":  {1, 2 * 7 * 9, 3, 4, 5, 6},
		"max":  {1, 9, 3, 4, 5, 6},
		"min":  {1, 2, 3, 4, 5, 6},
	} {
		m, err := onnxtest.Load(onnxtest.Model(18, nodes{
			onnxtest.Node("ScatterElements", []string{"x", "i", "u"}, []string{"y"}, onnxtest.Int("axis", 1), onnxtest.String("reduction", red)),
			onnxtest.Node("ScatterND", []string{"x", "j", "u2"}, []string{"z"}, onnxtest.String("reduction", red)),
		}, values{onnxtest.Value("x", nd.Float32, 2, 3)}, values{onnxtest.ValueNoShape("y", nd.Float32), onnxtest.ValueNoShape("z", nd.Float32)},
			onnxtest.Init("i", nd.Of([]int64{1, 1}, 1, 2)), onnxtest.Init("u", nd.Of([]float32{7, 9}, 1, 2)),
			onnxtest.Init("j", nd.Of([]int64{0, 1, 0, -2}, 2, 2)), onnxtest.Init("u2", nd.Of([]float32{7, 9}, 2))))
		require.NoError(t, err, red)
		out, err := m.Run([]nd.Array{data})
		require.NoError(t, err, red)
		assert.Equal(t, want, nd.MustAs[float32](out[0]), red)
		assert.Equal(t, want, nd.MustAs[float32](out[1]), red)
	}
}
