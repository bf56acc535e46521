package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Clip's vector kernel writes what Go's min(max(x, lo), hi) writes, for
// every length (the 64-, 16- and masked tails), any offset, NaN (kept),
// infinities, and never past len(x).
func TestClampVectorEqualsGo(t *testing.T) {
	if !clampVector {
		t.Skip("no vector kernel on this machine or build")
	}
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
