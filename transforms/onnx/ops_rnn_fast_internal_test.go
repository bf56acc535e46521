package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recurFast32 computes what recurTyped's float64 loop computes (within
// float32 rounding), for LSTM, GRU (linear_before_reset) and RNN, forward,
// reverse and bidirectional, on odd sizes (hidden sizes under, at and past
// the gate kernel's 8 lanes), with and without biases, initial states and
// sequence_lens (0, full and between, in any order), every output; with
// and without the vector kernels.
func TestRecurFast32MatchesLoop(t *testing.T) {
	saved := expWidth
	defer func() { expWidth = saved }()
	for _, width := range simdWidths() {
		expWidth = min(width, 8)
		t.Run(fmt.Sprintf("lanes=%d", expWidth), testRecurFast32)
	}
}

func testRecurFast32(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 7))
	for _, kind := range []rnnKind{rnnLSTM, rnnGRU, rnnSimple} {
		for _, dir := range []string{"forward", "reverse", "bidirectional"} {
			for trial := range 8 {
				k := &recurrent{kind: kind, name: [...]string{"RNN", "GRU", "LSTM"}[kind], dirs: 1, reverse: dir == "reverse", lbr: true}
				if dir == "bidirectional" {
					k.dirs = 2
				}
				k.acts = make([][]rnnAct, k.dirs)
				for i := range k.dirs {
					for _, name := range kind.defaultActs() {
						a := rnnAct{name: name, alpha: math.NaN(), beta: math.NaN()}
						a.f = a.fn()
						k.acts[i] = append(k.acts[i], a)
					}
				}
				require.True(t, k.fastRecurrent())
				d := rnnDims{seq: 1 + r.IntN(9), batch: 1 + r.IntN(7), input: 1 + 2*r.IntN(10), hidden: 1 + 2*r.IntN(12)}
				if trial >= 4 { // whole vectors of the gate kernel, and a rest
					d.hidden = []int{8, 16, 17, 33}[trial-4]
				}
				G := kind.gates()
				random := func(scale float64, shape ...int) nd.Array {
					a := float32Array(shape)
					for i := range nd.MustAs[float32](a) {
						nd.MustAs[float32](a)[i] = float32(scale * r.NormFloat64())
					}
					return a
				}
				in := make([]nd.Array, 7)
				in[0] = random(1, d.seq, d.batch, d.input)
				in[1] = random(0.5, k.dirs, G*d.hidden, d.input)
				in[2] = random(0.5, k.dirs, G*d.hidden, d.hidden)
				lens := make([]int, d.batch)
				for b := range lens {
					lens[b] = d.seq
				}
				if trial%2 == 1 {
					in[3] = random(0.5, k.dirs, 2*G*d.hidden)
					in[5] = random(1, k.dirs, d.batch, d.hidden)
					if kind == rnnLSTM {
						in[6] = random(1, k.dirs, d.batch, d.hidden)
					}
					for b := range lens {
						lens[b] = r.IntN(d.seq + 1)
					}
					lens[r.IntN(d.batch)] = 0
					lens[r.IntN(d.batch)] = d.seq
				}
				outs := func() []nd.Array {
					o := []nd.Array{float32Array([]int{d.seq, k.dirs, d.batch, d.hidden}), float32Array([]int{k.dirs, d.batch, d.hidden})}
					if kind == rnnLSTM {
						o = append(o, float32Array([]int{k.dirs, d.batch, d.hidden}))
					}
					for _, a := range o {
						for i := range nd.MustAs[float32](a) {
							nd.MustAs[float32](a)[i] = float32(math.NaN()) // every element written
						}
					}
					return o
				}
				got, want := outs(), outs()
				require.True(t, recurFast32(k, d, lens, in, got))
				recurTyped[float32](k, d, lens, in, want)
				for o := range want {
					g, w := nd.MustAs[float32](got[o]), nd.MustAs[float32](want[o])
					for i := range w {
						assert.InDelta(t, w[i], g[i], 1e-5, fmt.Sprintf("%s %s %+v lens %v: output %d element %d", k.name, dir, d, lens, o, i))
					}
				}
			}
		}
	}
}

// Peepholes, clip, other activations, input_forget, layout 1 and GRU
// without linear_before_reset keep the float64 loop.
func TestRecurFast32Forms(t *testing.T) {
	def := func(kind rnnKind) *recurrent {
		k := &recurrent{kind: kind, dirs: 1, lbr: true, acts: [][]rnnAct{nil}}
		for _, name := range kind.defaultActs() {
			k.acts[0] = append(k.acts[0], rnnAct{name: name})
		}
		return k
	}
	assert.True(t, def(rnnLSTM).fastRecurrent())
	assert.True(t, def(rnnGRU).fastRecurrent())
	assert.True(t, def(rnnSimple).fastRecurrent())
	relu := def(rnnSimple)
	relu.acts[0][0].name = "Relu"
	assert.False(t, relu.fastRecurrent())
	for _, change := range []func(k *recurrent){
		func(k *recurrent) { k.clip = 3 },
		func(k *recurrent) { k.layout = 1 },
		func(k *recurrent) { k.inputForget = true; k.lbr = false },
		func(k *recurrent) { k.acts[0][0].name = "HardSigmoid" },
	} {
		k := def(rnnLSTM)
		if change(k); k.kind == rnnLSTM && k.inputForget {
			assert.False(t, k.fastRecurrent())
			g := def(rnnGRU)
			g.lbr = false
			assert.False(t, g.fastRecurrent())
			continue
		}
		assert.False(t, k.fastRecurrent())
	}
	peep := make([]nd.Array, 8)
	peep[7] = float32Array([]int{1, 3})
	assert.False(t, recurFast32(def(rnnLSTM), rnnDims{1, 1, 1, 1}, []int{1}, peep, nil))
}

// lstmGates' vector kernel gives lstmGate1's bits for every unit of a
// row (NaN for NaN), on sums of several scales, ±Inf, NaN and huge values,
// hidden sizes with and without a rest past the whole vectors.
func TestLSTMGatesVec(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 8))
	special := []float32{0, float32(math.Copysign(0, -1)), 88, -88, 1e30, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, H := range []int{1, 7, 8, 9, 24, 128, 131} {
		for _, scale := range []float64{1e-3, 1, 4, 30, 1e4} {
			g, c := make([]float32, 4*H), make([]float32, H)
			for i := range g {
				g[i] = float32(scale * r.NormFloat64())
				if r.IntN(20) == 0 {
					g[i] = special[r.IntN(len(special))]
				}
			}
			for i := range c {
				c[i] = float32(scale * r.NormFloat64())
			}
			gotC, gotH := slices.Clone(c), make([]float32, H)
			n := lstmGatesVec(slices.Clone(g), gotC, gotH, H)
			if expWidth == 0 {
				assert.Zero(t, n)
			} else {
				assert.Equal(t, H&^7, n)
			}
			for j := range n {
				wc, wh := lstmGate1(g[j], g[H+j], g[2*H+j], g[3*H+j], c[j])
				for _, p := range [][2]float32{{wc, gotC[j]}, {wh, gotH[j]}} {
					if p[0] != p[0] {
						assert.True(t, p[1] != p[1], "H %d unit %d: %v, want NaN", H, j, p[1])
						continue
					}
					assert.Equal(t, math.Float32bits(p[0]), math.Float32bits(p[1]), "H %d scale %v unit %d: %v, want %v", H, scale, j, p[1], p[0])
				}
			}
		}
	}
}

// With constant weights the packing is made on the first run and kept
// (the same pointer on the next), and gives the bits of a packing made
// for the run; other weights (another W's data) are packed anew, not
// served the kept ones.
func TestRecurFast32KeepsPacking(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 9))
	for _, kind := range []rnnKind{rnnLSTM, rnnGRU, rnnSimple} {
		k := &recurrent{kind: kind, dirs: 2, lbr: true, acts: make([][]rnnAct, 2)}
		for i := range k.acts {
			for _, name := range kind.defaultActs() {
				k.acts[i] = append(k.acts[i], rnnAct{name: name})
			}
		}
		d := rnnDims{seq: 5, batch: 3, input: 6, hidden: 9}
		G := kind.gates()
		random := func(shape ...int) nd.Array {
			a := float32Array(shape)
			for i := range nd.MustAs[float32](a) {
				nd.MustAs[float32](a)[i] = float32(0.5 * r.NormFloat64())
			}
			return a
		}
		in := []nd.Array{random(d.seq, d.batch, d.input), random(2, G*d.hidden, d.input), random(2, G*d.hidden, d.hidden), random(2, 2*G*d.hidden)}
		lens := []int{5, 2, 4}
		run := func() []float32 {
			y := float32Array([]int{d.seq, 2, d.batch, d.hidden})
			require.True(t, recurFast32(k, d, lens, in, []nd.Array{y}))
			return nd.MustAs[float32](y)
		}
		fresh := run()
		assert.Nil(t, k.prep.Load(), "weights not constant: nothing kept")
		k.constW.Store(true)
		assert.Equal(t, fresh, run())
		kept := k.prep.Load()
		require.NotNil(t, kept)
		assert.Equal(t, fresh, run())
		assert.Same(t, kept, k.prep.Load(), "the packing is kept")
		in[1] = random(2, G*d.hidden, d.input)
		other := run()
		assert.NotEqual(t, fresh, other)
		k.constW.Store(false)
		k.prep.Store(nil)
		assert.Equal(t, other, run(), "other weights: packed anew")
	}
}

// Empty sizes (no steps, no rows, no inputs, no hidden units) run without
// a product of an empty matrix and give recurTyped's outputs.
func TestRecurFast32Empty(t *testing.T) {
	for _, kind := range []rnnKind{rnnLSTM, rnnGRU, rnnSimple} {
		for _, d := range []rnnDims{{0, 2, 3, 4}, {2, 0, 3, 4}, {2, 2, 0, 4}, {2, 2, 3, 0}} {
			k := &recurrent{kind: kind, dirs: 1, lbr: true, acts: make([][]rnnAct, 1)}
			for _, name := range kind.defaultActs() {
				k.acts[0] = append(k.acts[0], rnnAct{name: name})
			}
			G := kind.gates()
			bias := float32Array([]int{1, 2 * G * d.hidden})
			for i := range nd.MustAs[float32](bias) {
				nd.MustAs[float32](bias)[i] = 0.25 * float32(i%7-3)
			}
			in := []nd.Array{float32Array([]int{d.seq, d.batch, d.input}), float32Array([]int{1, G * d.hidden, d.input}), float32Array([]int{1, G * d.hidden, d.hidden}), bias}
			lens := make([]int, d.batch)
			for i := range lens {
				lens[i] = d.seq
			}
			outs := func() []nd.Array {
				return []nd.Array{float32Array([]int{d.seq, 1, d.batch, d.hidden}), float32Array([]int{1, d.batch, d.hidden})}
			}
			got, want := outs(), outs()
			require.True(t, recurFast32(k, d, lens, in, got), "%v %+v", k.kind, d)
			recurTyped[float32](k, d, lens, in, want)
			for o := range want {
				assert.InDeltaSlice(t, nd.MustAs[float32](want[o]), nd.MustAs[float32](got[o]), 1e-5, "%v %+v output %d", k.kind, d, o)
			}
		}
	}
}

// gruStep's vector kernel gives gruGate1's bits for every unit of a row
// (NaN for NaN), as TestLSTMGatesVec for LSTM.
func TestGRUGatesVec(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 10))
	special := []float32{0, float32(math.Copysign(0, -1)), 88, -88, 1e30, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, H := range []int{1, 7, 8, 9, 24, 128, 131} {
		for _, scale := range []float64{1e-3, 1, 4, 30, 1e4} {
			fill := func(n int) []float32 {
				s := make([]float32, n)
				for i := range s {
					s[i] = float32(scale * r.NormFloat64())
					if r.IntN(20) == 0 {
						s[i] = special[r.IntN(len(special))]
					}
				}
				return s
			}
			hr, x, rbh, h := fill(3*H), fill(3*H), fill(H), fill(H)
			got := slices.Clone(h)
			n := gruGatesVec(hr, x, rbh, got, H)
			if expWidth == 0 {
				assert.Zero(t, n)
			} else {
				assert.Equal(t, H&^7, n)
			}
			for j := range n {
				want := gruGate1(hr[j], hr[H+j], hr[2*H+j], x[j], x[H+j], x[2*H+j], rbh[j], h[j])
				if want != want {
					assert.True(t, got[j] != got[j], "H %d unit %d: %v, want NaN", H, j, got[j])
					continue
				}
				assert.Equal(t, math.Float32bits(want), math.Float32bits(got[j]), "H %d scale %v unit %d: %v, want %v", H, scale, j, got[j], want)
			}
		}
	}
}
