package tensor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBatchIDAndSize(t *testing.T) {
	b := Batch{Source: "t10k-images-idx3-ubyte.gz", Rows: 256, Cols: 2, X: make([]float32, 512), Labels: make([]int32, 256)}
	assert.Equal(t, "t10k-images-idx3-ubyte.gz[0:256]", b.ID())
	assert.Equal(t, 256, b.Items())
	assert.Equal(t, 4*512+4*256, b.Bytes())
	s := b.Slice(10, 20)
	assert.Equal(t, "t10k-images-idx3-ubyte.gz[10:20]", s.ID())
	assert.Equal(t, 10, s.Rows)
	assert.Len(t, s.X, 20)
	assert.Len(t, s.Labels, 10)
	assert.Panics(t, func() { b.Slice(5, 300) })
	parts := b.Split(100)
	require.Len(t, parts, 3)
	assert.Equal(t, "t10k-images-idx3-ubyte.gz[200:256]", parts[2].ID())

	p := Predictions{Source: "f", Offset: 3, Predicted: make([]int32, 4), Labels: []int32{0, 1, -1, 1}, Scores: make([]float32, 40), Classes: 10}
	assert.Equal(t, "f[3:7]", p.ID())
	assert.Equal(t, 4, p.Items())
	assert.Equal(t, 4*(4+4+40), p.Bytes())
	acc, n := p.Accuracy()
	assert.Equal(t, 3, n)
	assert.InDelta(t, 1.0/3, acc, 1e-12)
}

func TestBatchValidate(t *testing.T) {
	b := Batch{Source: "s.gz", Offset: 100, Rows: 2, Cols: 3, X: []float32{0, 1, 2, 3, 4, 5}}
	require.NoError(t, b.Validate())

	bad := b
	bad.X = []float32{0, 1, 2, 3, float32(math.NaN()), 5}
	assert.EqualError(t, bad.Validate(), "s.gz: row 101 column 1: value is NaN")
	bad.X = []float32{0, 1, float32(math.Inf(-1)), 3, 4, 5}
	assert.EqualError(t, bad.Validate(), "s.gz: row 100 column 2: value is -Inf")

	bad = b
	bad.X = bad.X[:5]
	assert.ErrorContains(t, bad.Validate(), "shape 2x3 needs 6 values, X has 5")
	bad = b
	bad.Labels = []int32{1}
	assert.ErrorContains(t, bad.Validate(), "2 rows but 1 labels")
	bad.Labels = []int32{1, -2}
	assert.EqualError(t, bad.Validate(), "s.gz: row 101: label -2 is negative (-1 is the only allowed unknown label)")
}

// isBad is exactly NaN or infinity, whatever the NaN's payload.
func TestIsBad(t *testing.T) {
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40} {
		assert.False(t, isBad(v), "%v", v)
	}
	for _, bits := range []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x7fffffff, 0xffffffff} {
		assert.True(t, isBad(math.Float32frombits(bits)), "%#08x", bits)
	}
}
