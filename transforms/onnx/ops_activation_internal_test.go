package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Clip's vector kernel writes what Go's min(max(x, lo), hi) writes, for
// every length (the 64-, 16- and masked tails), any offset, NaN (kept),
// infinities, and never past len(x).
func TestClampVectorEqualsGo(t *testing.T) {
	saved := actWidth
	defer func() { actWidth = saved }()
	for _, width := range simdWidths() {
		if width == 0 {
			continue
		}
		actWidth = width
		t.Run(fmt.Sprintf("lanes=%d", width), testClampVector)
	}
}

func testClampVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, 6, -1e30, 1e30}
	for _, b := range [][2]float32{{0, 6}, {-1, 1}, {float32(math.Inf(-1)), 0.5}, {2, 2}} {
		lo, hi := b[0], b[1]
		for n := 0; n <= 200; n++ {
			for _, off := range []int{0, 1, 3} {
				buf := make([]float32, off+n+16)
				for i := range buf {
					buf[i] = rng.Float32()*20 - 10
					if rng.IntN(8) == 0 {
						buf[i] = special[rng.IntN(len(special))]
					}
				}
				x := buf[off : off+n]
				y := make([]float32, n+16)
				for i := range y {
					y[i] = -7
				}
				require.True(t, clampF32(y[:n], x, lo, hi))
				for i, v := range x {
					want := min(max(v, lo), hi)
					if want != want {
						assert.True(t, y[i] != y[i], "n %d off %d [%d]: %v, want NaN", n, off, i, y[i])
						continue
					}
					assert.Equal(t, want, y[i], "n %d off %d [%d] of %v in [%v, %v]", n, off, i, v, lo, hi)
				}
				for i := n; i < len(y); i++ {
					require.Equal(t, float32(-7), y[i], "n %d: written past the end at %d", n, i)
				}
			}
		}
	}
}

// HardSigmoid's and HardSwish's vector kernels write the bits Go's loop
// (activateFloats) writes, at every width this CPU runs, for every length
// (whole vectors and masked tails), any offset, NaN, infinities and
// signed zeros, and never past len(x).
func TestHardVectorEqualsGo(t *testing.T) {
	saved := actWidth
	defer func() { actWidth = saved }()
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), -3, 3, 2.5, -2.5, 1e30}
	for _, width := range simdWidths() {
		if width == 0 {
			continue
		}
		actWidth = width
		for _, k := range []ewUnary{{op: unHardSigmoid, alpha: 0.2, beta: 0.5}, {op: unHardSwish, alpha: 1.0 / 6, beta: 0.5}, {op: unHardSigmoid, alpha: -1.5, beta: 0.25}} {
			for n := 0; n <= 70; n++ {
				off := n % 3
				buf := make([]float32, off+n)
				for i := range buf {
					buf[i] = rng.Float32()*10 - 5
					if rng.IntN(6) == 0 {
						buf[i] = special[rng.IntN(len(special))]
					}
				}
				x := buf[off:]
				want := make([]float32, n)
				activateFloats(&k, x, want)
				got := make([]float32, n+9)
				for i := range got {
					got[i] = -7
				}
				require.True(t, hardF32(got[:n], x, k.alpha, k.beta, k.op == unHardSwish))
				for i := range want {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%d lanes, op %d alpha %v, n %d: [%d] of %v: %v, want %v", width, k.op, k.alpha, n, i, x[i], got[i], want[i])
				}
				for i := n; i < len(got); i++ {
					require.Equal(t, float32(-7), got[i], "%d lanes, n %d: written past the end at %d", width, n, i)
				}
			}
		}
	}
}

// addVec adds whole vectors (the same bits as the Go loop: one rounded sum
// each) and leaves the rest, never past the end, at every width.
func TestAddVec(t *testing.T) {
	saved := actWidth
	defer func() { actWidth = saved }()
	r := rand.New(rand.NewPCG(28, 39))
	for _, width := range simdWidths() {
		actWidth = width
		for _, n := range []int{0, 7, 8, 31, 32, 77} {
			y, z := make([]float32, n+3), make([]float32, n)
			for i := range z {
				y[i], z[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			y[n] = 5
			want := slices.Clone(y)
			for i := range z {
				want[i] += z[i]
			}
			i := addVec(y[:n], z)
			if width == 0 {
				assert.Zero(t, i)
			} else {
				assert.Equal(t, n&^7, i)
			}
			for ; i < n; i++ {
				y[i] += z[i]
			}
			assert.Equal(t, want, y, "n %d width %d", n, width)
		}
	}
}

// preluVec gives prelu's bits (a negative slope too: -0 stays -0, NaN
// stays NaN), whole vectors only, at every width.
func TestPreluVec(t *testing.T) {
	saved := actWidth
	defer func() { actWidth = saved }()
	r := rand.New(rand.NewPCG(28, 40))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1e-45}
	for _, width := range simdWidths() {
		actWidth = width
		for _, s := range []float32{0.25, -1.5, 0} {
			for _, n := range []int{0, 7, 8, 40, 77} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64())
					if r.IntN(5) == 0 {
						x[i] = special[r.IntN(len(special))]
					}
				}
				y := make([]float32, n+1)
				y[n] = 9
				i := preluVec(y[:n], x, s)
				if width == 0 {
					assert.Zero(t, i)
				} else {
					assert.Equal(t, n&^7, i)
				}
				for j := range i {
					want := prelu(x[j], s)
					if want != want {
						assert.True(t, y[j] != y[j], "prelu(%v, %v) = %v, want NaN", x[j], s, y[j])
						continue
					}
					assert.Equal(t, math.Float32bits(want), math.Float32bits(y[j]), "prelu(%v, %v)", x[j], s)
				}
				assert.Equal(t, float32(9), y[n])
			}
		}
	}
}
