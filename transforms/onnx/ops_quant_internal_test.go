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

// requantRow rounds half to even (ties at 0.5, 1.5, 2.5, -0.5, -1.5),
// saturates sums far out of range (past 2^22, where adding roundMagic no
// longer rounds to integers, and past int32's float range), adds the bias
// in int32, and gives the same from int32 and exact float32 sums.
func TestRequantRow(t *testing.T) {
	acc := []int32{1, 3, 5, -1, -3, 1 << 30, -1 << 30, 1<<24 + 1, math.MaxInt32, math.MinInt32}
	want := []uint8{10, 12, 12, 10, 8, 255, 0, 255, 255, 0}
	got := make([]uint8, len(acc))
	requantRow(got, acc, 0, 0.5, nil, 10)
	assert.Equal(t, want, got)
	f := []float32{1, 3, 5, -1, -3}
	requantRow(got[:5], f, 0, 0.5, nil, 10)
	assert.Equal(t, want[:5], got[:5])
	// int8, a bias, per-value multipliers.
	g8 := make([]int8, 4)
	requantRow(g8, []int32{0, 0, 100, -100}, 3, 0, []float32{0.5, 1.5, 2, 2}, -1)
	assert.Equal(t, []int8{1, 3, 127, -128}, g8) // 1.5 -> 2, 4.5 -> 4, 206 and -194 saturate
}

// quantize's vector kernel gives quantizeOne's values at every width this
// CPU runs (0: the plain Go loop), for uint8 and int8, zero points at
// either end of the range and between, per axis too, every length and
// offset: ties (rounded half to even), values far out of range, infinities
// and NaN (the zero point), never past the end.
func TestQuantizeVectorEqualsGo(t *testing.T) {
	saved := quantWidth
	defer func() { quantWidth = saved }()
	for _, width := range simdWidths() {
		quantWidth = min(width, 8)
		t.Run(fmt.Sprintf("lanes=%d", quantWidth), func(t *testing.T) {
			testQuantizeVector[uint8](t, []int32{0, 128, 255})
			testQuantizeVector[int8](t, []int32{-128, 0, 127, 3})
		})
	}
}

func testQuantizeVector[Q int8 | uint8](t *testing.T, zps []int32) {
	rng := rand.New(rand.NewPCG(7, 8))
	lo, hi, _ := qRange(nd.TypeOf[Q]())
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e30, -1e30, 3e9, -3e9}
	for _, scale := range []float32{1, 0.5, 0.02, 3.7e-3, 1e-30} {
		for _, zp := range zps {
			for n := 0; n <= 100; n += 1 + n/8 {
				for _, off := range []int{0, 3} {
					buf := make([]float32, off+n)
					for i := range buf {
						switch rng.IntN(4) {
						case 0: // a tie: k + 1/2 times scale
							buf[i] = (float32(rng.IntN(600)-300) + 0.5) * scale
						case 1:
							buf[i] = special[rng.IntN(len(special))]
						default:
							buf[i] = float32(rng.NormFloat64()) * 200 * scale
						}
					}
					x := buf[off:]
					y := make([]Q, n+5)
					for i := range y {
						y[i] = 7
					}
					quantize(x, y[:n], qParams{scale: []float32{scale}, zp: []int32{zp}}, 1, 1, n)
					for i, v := range x {
						require.Equal(t, Q(quantizeOne(v, scale, zp, lo, hi)), y[i], "scale %v zp %d n %d [%d] = %v", scale, zp, n, i, v)
					}
					for i := n; i < len(y); i++ {
						require.Equal(t, Q(7), y[i], "n %d: written past the end at %d", n, i)
					}
				}
			}
		}
	}
	// Per axis: 2 x 3 x 40 values, a scale and zero point per index of the middle axis.
	x := make([]float32, 2*3*40)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * 10
	}
	q := qParams{scale: []float32{0.1, 0.05, 0.3}, zp: []int32{zps[0], zps[1], zps[2]}}
	y := make([]Q, len(x))
	quantize(x, y, q, 2, 3, 40)
	for i, v := range x {
		c := i / 40 % 3
		require.Equal(t, Q(quantizeOne(v, q.scale[c], q.zp[c], lo, hi)), y[i], "per axis [%d]", i)
	}
}

// minMaxVec's kernel finds the range of every prefix in whole blocks, and
// reports a NaN wherever it is in them.
func TestMinMaxVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for n := 0; n <= 80; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * 5
		}
		lo, hi, m, nan := minMaxVec(x)
		assert.False(t, nan)
		if quantWidth == 0 {
			assert.Zero(t, m)
			continue
		}
		require.Equal(t, n&^15, m)
		if m == 0 {
			continue
		}
		wlo, whi := slices.Min(x[:m]), slices.Max(x[:m])
		assert.Equal(t, wlo, lo, "n %d", n)
		assert.Equal(t, whi, hi, "n %d", n)
		for i := range m {
			x[i] = float32(math.NaN())
			_, _, _, nan = minMaxVec(x)
			require.True(t, nan, "n %d: NaN at %d", n, i)
			x[i] = 0
		}
	}
}

// requantRow's vector kernel (int32 sums) gives the plain loop's values:
// uint8 and int8, zero points at the ends of the range, with and without a
// bias, one multiplier and one per sum, ties (odd sums times 0.5), sums far
// out of range and at int32's ends (the bias wrapping as in the loop),
// every length, never past the end.
func TestRequantVectorEqualsGo(t *testing.T) {
	saved := quantWidth
	defer func() { quantWidth = saved }()
	testRequantVector[uint8](t, []int32{0, 128, 255})
	testRequantVector[int8](t, []int32{-128, 0, 127})
}

func testRequantVector[Y int8 | uint8](t *testing.T, zps []int32) {
	rng := rand.New(rand.NewPCG(13, 14))
	special := []int32{math.MaxInt32, math.MinInt32, 1 << 22, -1 << 22, 1<<24 + 1, 0}
	for _, zp := range zps {
		for _, bias := range []int32{0, -37, 1000} {
			for _, perSum := range []bool{false, true} {
				for n := 0; n <= 100; n += 1 + n/6 {
					s := make([]int32, n)
					mults := make([]float32, n)
					for i := range s {
						s[i] = rng.Int32N(2001) - 1000
						if rng.IntN(8) == 0 {
							s[i] = special[rng.IntN(len(special))]
						}
						mults[i] = []float32{0.5, 0.25, 1.5e-3, 3}[rng.IntN(4)]
					}
					ms := mults
					if !perSum {
						ms = nil
					}
					want := make([]Y, n)
					quantWidth = 0
					requantRow(want, s, bias, 0.5, ms, zp)
					quantWidth = min(simdWidth, 8)
					got := make([]Y, n+3)
					for i := range got {
						got[i] = 9
					}
					requantRow(got[:n], s, bias, 0.5, ms, zp)
					require.Equal(t, want, got[:n], "zp %d bias %d per sum %v n %d", zp, bias, perSum, n)
					require.Equal(t, []Y{9, 9, 9}, got[n:], "n %d: written past the end", n)
				}
			}
		}
	}
}

// dequantize's vector kernel gives the Go loop's bits at every width this
// CPU runs, for uint8 and int8, zero points across the range, every length
// and offset, per axis too, never past the end.
func TestDequantizeVectorEqualsGo(t *testing.T) {
	saved := quantWidth
	defer func() { quantWidth = saved }()
	for _, width := range simdWidths() {
		quantWidth = min(width, 8)
		testDequantizeVector[uint8](t, []int32{0, 128, 255})
		testDequantizeVector[int8](t, []int32{-128, 0, 127})
	}
}

func testDequantizeVector[X int8 | uint8](t *testing.T, zps []int32) {
	rng := rand.New(rand.NewPCG(7, 9))
	for _, scale := range []float32{1, 0.02, 3.7e-3, 1e-30} {
		for _, zp := range zps {
			for n := 0; n <= 70; n += 1 + n/8 {
				buf := make([]X, 3+2*n)
				for i := range buf {
					buf[i] = X(rng.IntN(256))
				}
				x := buf[3:]
				y := make([]float32, 2*n+5)
				for i := range y {
					y[i] = 7
				}
				q := qParams{scale: []float32{scale, scale * 3}, zp: []int32{zp, zp / 2}}
				dequantize(x, y[:2*n], q, 1, 2, n) // per axis: two channels of n
				for i, v := range x {
					c := i / max(n, 1)
					require.Equal(t, float32(int32(v)-q.zp[c])*q.scale[c], y[i], "width %d scale %v zp %d n %d [%d]", quantWidth, scale, zp, n, i)
				}
				for i := 2 * n; i < len(y); i++ {
					require.Equal(t, float32(7), y[i], "n %d: written past the end at %d", n, i)
				}
			}
		}
	}
}

// fillPhases2D's planes are fillPhases's, each value xor flip, on strides
// 1 to 3 (2: deinterleave, rows of 16 bytes and more and fewer), pads of
// 0 to 3, dilations and input widths odd and even.
func TestFillPhases2D(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	for trial := range 400 {
		var geo geometry
		geo.nd = 2
		for a := 1; a < 3; a++ {
			geo.k[a], geo.stride[a], geo.dil[a] = 1+r.IntN(4), 1+r.IntN(3), 1+r.IntN(2)
			geo.padLo[a], geo.padHi[a] = r.IntN(4), r.IntN(4)
			geo.in[a] = 1 + r.IntN(40)
			if trial%4 == 0 {
				geo.stride[a] = 2
			}
			span := geo.dil[a]*(geo.k[a]-1) + 1
			if geo.in[a]+geo.padLo[a]+geo.padHi[a] < span {
				geo.in[a] = span
			}
			geo.out[a] = (geo.in[a]+geo.padLo[a]+geo.padHi[a]-span)/geo.stride[a] + 1
		}
		geo.k[0], geo.in[0], geo.out[0], geo.stride[0], geo.dil[0] = 1, 1, 1, 1, 1
		g := newConvGrid(convProblem{geo: geo, n: 1, c: 1, m: 4, group: 1})
		x := make([]byte, geo.in[1]*geo.in[2])
		for i := range x {
			x[i] = byte(r.Uint32())
		}
		pad, flip := byte(r.Uint32()), byte(0x80*r.IntN(2))
		want := make([]byte, g.phases*g.plane)
		fillPhases(g, geo, want, x, pad, func(d, src []byte, step int) {
			for i := range d {
				d[i] = src[i*step] ^ flip
			}
		})
		got := make([]byte, len(want))
		fillPhases2D(g, geo, got, x, pad, flip)
		require.Equal(t, want, got, "trial %d: %+v", trial, geo)
	}
}
