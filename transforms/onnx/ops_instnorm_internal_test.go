package onnx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
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
