package tensor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randMLP(r *rand.Rand, dims ...int) *MLP {
	m, err := NewMLP(dims...)
	if err != nil {
		panic(err)
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		s := math.Sqrt(2 / float64(l.In))
		for j := range l.W {
			l.W[j] = float32(r.NormFloat64() * s)
		}
		for j := range l.B {
			l.B[j] = float32(r.NormFloat64() * 0.1)
		}
	}
	return m
}

// forward64 is a float64 reference MLP forward pass, written plainly.
func forward64(m *MLP, b Batch) [][]float64 {
	out := make([][]float64, b.Rows)
	for i := range out {
		h := make([]float64, b.Cols)
		for c, v := range b.Row(i) {
			h[c] = float64(v)
		}
		for _, l := range m.Layers {
			y := make([]float64, l.Out)
			for o := range y {
				y[o] = float64(l.B[o])
				for in := 0; in < l.In; in++ {
					y[o] += h[in] * float64(l.W[in*l.Out+o])
				}
				if l.ReLU && y[o] < 0 {
					y[o] = 0
				}
			}
			h = y
		}
		out[i] = h
	}
	return out
}

func TestMLPForwardMatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	m := randMLP(r, 784, 256, 128, 10)
	b := randBatch(r, 300, 784)
	b.Labels = make([]int32, 300)
	got, err := m.Forward(b)
	require.NoError(t, err)
	require.Equal(t, 300, got.Rows)
	require.Equal(t, 10, got.Cols)
	assert.Equal(t, b.Labels, got.Labels)
	want := forward64(m, b)
	var num, den float64
	for i := range want {
		for c, w := range want[i] {
			d := float64(got.X[i*10+c]) - w
			num += d * d
			den += w * w
		}
	}
	rel := math.Sqrt(num / den)
	assert.Less(t, rel, 1e-5, "relative error of float32 vs float64")

	p, err := m.Predict(b)
	require.NoError(t, err)
	for i := range want {
		best := 0
		for c := range want[i] {
			if want[i][c] > want[i][best] {
				best = c
			}
		}
		assert.Equal(t, int32(best), p.Predicted[i], "row %d", i)
		var sum float32
		for _, s := range p.Scores[i*10 : (i+1)*10] {
			sum += s
		}
		assert.InDelta(t, 1, sum, 1e-5)
	}
}

func TestDenseErrors(t *testing.T) {
	d := Dense{In: 3, Out: 2, W: make([]float32, 6), B: make([]float32, 2)}
	_, err := d.Forward(Batch{Source: "f", Rows: 1, Cols: 4, X: make([]float32, 4)})
	assert.EqualError(t, err, "f[0:1]: 4 columns, the 3x2 layer needs 3")
	bad := d
	bad.W = bad.W[:5]
	_, err = bad.Forward(Batch{Source: "f", Rows: 1, Cols: 3, X: make([]float32, 3)})
	assert.EqualError(t, err, "f[0:1]: dense layer 3x2: W has 5 values, want 6")
	bad = d
	bad.B = nil
	_, err = bad.Forward(Batch{Source: "f", Rows: 1, Cols: 3, X: make([]float32, 3)})
	assert.EqualError(t, err, "f[0:1]: dense layer 3x2: B has 0 values, want 2")
	_, err = d.Forward(Batch{Source: "f", Rows: 2, Cols: 3, X: make([]float32, 3)})
	assert.ErrorContains(t, err, "shape 2x3 needs 6 values, X has 3")

	out, err := d.Forward(Batch{Source: "f", Rows: 0, Cols: 3})
	require.NoError(t, err)
	assert.Equal(t, 0, out.Rows)
	assert.Equal(t, 2, out.Cols)
}

func TestDenseReLU(t *testing.T) {
	d := Dense{In: 2, Out: 2, W: []float32{1, -1, 2, 3}, B: []float32{0.5, -10}, ReLU: true}
	out, err := d.Forward(Batch{Source: "f", Rows: 1, Cols: 2, X: []float32{1, 1}})
	require.NoError(t, err)
	assert.Equal(t, []float32{3.5, 0}, out.X) // [1+2+0.5, -1+3-10] -> ReLU
	d.ReLU = false
	out, err = d.Forward(Batch{Source: "f", Rows: 1, Cols: 2, X: []float32{1, 1}})
	require.NoError(t, err)
	assert.Equal(t, []float32{3.5, -8}, out.X)
}

func TestSoftmax(t *testing.T) {
	b := Batch{Source: "s", Rows: 2, Cols: 3, X: []float32{1, 2, 3, 1000, 1000, -1000}}
	p, err := Softmax(b)
	require.NoError(t, err)
	e := []float64{math.Exp(-2), math.Exp(-1), 1}
	s := e[0] + e[1] + e[2]
	assert.InDeltaSlice(t, []float32{float32(e[0] / s), float32(e[1] / s), float32(e[2] / s), 0.5, 0.5, 0}, p.X, 1e-7)

	_, err = Softmax(Batch{Source: "s", Offset: 5, Rows: 1, Cols: 2, X: []float32{1, float32(math.Inf(1))}})
	assert.EqualError(t, err, "s: row 5 column 1: value is +Inf")
	_, err = Softmax(Batch{Source: "s", Rows: 1, Cols: 0})
	assert.EqualError(t, err, "s[0:1]: softmax of rows with no columns")
}

func TestArgmaxAndTopK(t *testing.T) {
	nan := float32(math.NaN())
	b := Batch{Source: "a", Rows: 4, Cols: 4, Labels: []int32{1, 2, 3, -1}, X: []float32{
		0.1, 0.4, 0.4, 0.1, // tie: lowest index
		3, 2, 1, 0,
		nan, -5, nan, -1,
		7, 7, 7, 7,
	}}
	p := Argmax(b)
	assert.Equal(t, []int32{1, 0, 3, 0}, p.Predicted)
	assert.Equal(t, 4, p.Classes)
	assert.Equal(t, []int32{1, 2, 3, -1}, p.Labels)

	top, err := TopK(b, 3)
	require.NoError(t, err)
	assert.Equal(t, [][]int32{{1, 2, 0}, {0, 1, 2}, {3, 1, 0}, {0, 1, 2}}, top)
	_, err = TopK(b, 5)
	assert.EqualError(t, err, "a[0:4]: top 5 of 4 columns: k must be in 1..4")
	_, err = TopK(b, 0)
	assert.Error(t, err)
}
