package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The normalizations' vector loops: sums and squared deviations within
// 1e-12 relative of the plain loops' (the partial sums differ), the
// affine step the same bits, on odd lengths and values of several scales,
// at every width this CPU has.
func TestNormLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 38))
	saved := normWidth
	defer func() { normWidth = saved }()
	for _, n := range []int{0, 5, 8, 13, 64, 4099} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(100 + r.NormFloat64()*math.Pow(10, float64(r.IntN(4)-2)))
		}
		normWidth = 0
		sum, mean := sum4(v), 0.0
		if n > 0 {
			mean = sum / float64(n)
		}
		dev := sqDev4(v, mean)
		want := make([]float32, n)
		for i, e := range v {
			want[i] = float32((float64(e)-mean)*0.37 + 1.5)
		}
		for _, width := range simdWidths() {
			normWidth = min(width, 8)
			assert.InDelta(t, sum, sum4(v), 1e-12*math.Abs(sum)+1e-300, "n %d width %d", n, width)
			assert.InDelta(t, dev, sqDev4(v, mean), 1e-12*dev+1e-300, "n %d width %d", n, width)
			y := make([]float32, n)
			i := affineVec(y, v, mean, 0.37, 1.5)
			for ; i < n; i++ {
				y[i] = float32((float64(v[i])-mean)*0.37 + 1.5)
			}
			assert.Equal(t, want, y, "n %d width %d", n, width)
		}
	}
}

// LayerNormalization's last step over a row gives the same bits on its
// vector kernel as in Go, with a bias and without, on rows of every
// length up to past two vectors.
func TestNormRowVec(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	saved := normWidth
	defer func() { normWidth = saved }()
	for n := 1; n <= 21; n++ {
		x, scale, bias := uniform(r, n), uniform(r, n), uniform(r, n)
		for _, b := range [][]float32{bias, nil} {
			normWidth = 0
			want := make([]float32, n)
			normRow(x, want, scale, b, 0.25, 1.75)
			for _, width := range simdWidths() {
				normWidth = min(width, 8)
				got := make([]float32, n)
				normRow(x, got, scale, b, 0.25, 1.75)
				for i := range want {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "n %d, %d lanes, bias %v: element %d", n, width, b != nil, i)
				}
			}
		}
	}
}

// LayerNormalization of many float32 rows at one call of the AVX-512
// kernel (layerNormRowsF32) gives meanInv's and normRow's bits for each
// row, in place or not, with a bias and without: rows of 1 to 40 values
// and of 64, 96, 197 and 768 (the tails under a mask, sum4's and sqDev4's
// order over the last n%8), with a row holding a NaN, one holding +Inf,
// one of equal values (no deviation: eps alone) and one of large values.
func TestLayerNormRowsEqualsRow(t *testing.T) {
	r := rand.New(rand.NewPCG(97, 98))
	saved := layerNormRowsWide
	defer func() { layerNormRowsWide = saved }()
	lengths := []int{64, 96, 197, 768}
	for n := 1; n <= 40; n++ {
		lengths = append(lengths, n)
	}
	const eps = 1e-5
	for _, n := range lengths {
		rows := 7
		x := make([]float32, rows*n)
		for i := range x {
			x[i] = float32(2*r.NormFloat64() + 0.5)
		}
		row := func(i int) []float32 { return x[i*n : (i+1)*n] }
		row(1)[r.IntN(n)] = float32(math.NaN())
		row(2)[r.IntN(n)] = float32(math.Inf(1))
		for j := range row(3) {
			row(3)[j] = 1.25
		}
		for j := range row(4) {
			row(4)[j] = float32(r.NormFloat64() * 1e6)
		}
		scale, bias := make([]float32, n), make([]float32, n)
		for i := range scale {
			scale[i], bias[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		for _, b := range [][]float32{bias, nil} {
			want := make([]float32, len(x))
			for i := range rows {
				mean, inv := meanInv(row(i), eps)
				normRow(row(i), want[i*n:(i+1)*n], scale, b, float32(mean), float32(inv))
			}
			for _, wide := range []bool{true, false} {
				layerNormRowsWide = wide && saved
				got := make([]float32, len(x))
				layerNormRowsF32(x, got, scale, b, n, eps)
				inPlace := append([]float32(nil), x...)
				layerNormRowsF32(inPlace, inPlace, scale, b, n, eps)
				for j := range want {
					require.Equal(t, math.Float32bits(want[j]), math.Float32bits(got[j]), "n %d, bias %v, kernel %v: row %d element %d", n, b != nil, layerNormRowsWide, j/n, j%n)
					require.Equal(t, math.Float32bits(want[j]), math.Float32bits(inPlace[j]), "n %d, bias %v, kernel %v, in place: row %d element %d", n, b != nil, layerNormRowsWide, j/n, j%n)
				}
			}
			layerNormRowsWide = saved
			require.Equal(t, saved, layerNormRowsVec(x, make([]float32, len(x)), scale, b, n, eps), "n %d: on the kernel?", n)
		}
	}
}
