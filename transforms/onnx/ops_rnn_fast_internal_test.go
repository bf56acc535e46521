package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recurFast32 computes what recurTyped's float64 loop computes (within
// float32 rounding), for LSTM and GRU (linear_before_reset), forward,
// reverse and bidirectional, on odd sizes, with and without biases,
// initial states and sequence_lens, every output.
func TestRecurFast32MatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 7))
	for _, kind := range []rnnKind{rnnLSTM, rnnGRU} {
		for _, dir := range []string{"forward", "reverse", "bidirectional"} {
			for trial := range 4 {
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
	assert.False(t, def(rnnSimple).fastRecurrent())
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
