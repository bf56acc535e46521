package tensor

import (
	"fmt"
	"math"
	"sort"

	"github.com/beamgpu/beamgpu/transforms/gemm"
)

// Dense is a fully connected layer: y = x W + B, then max(y, 0) if ReLU.
type Dense struct {
	In, Out int
	W       []float32 // In x Out, row-major
	B       []float32 // Out
	ReLU    bool
}

// Validate checks the layer's own shape.
func (d Dense) Validate() error { return d.check() }

// check verifies the layer's own shape.
func (d Dense) check() error {
	if d.In <= 0 || d.Out <= 0 {
		return fmt.Errorf("dense layer %dx%d: dimensions must be positive", d.In, d.Out)
	}
	if len(d.W) != d.In*d.Out {
		return fmt.Errorf("dense layer %dx%d: W has %d values, want %d", d.In, d.Out, len(d.W), d.In*d.Out)
	}
	if len(d.B) != d.Out {
		return fmt.Errorf("dense layer %dx%d: B has %d values, want %d", d.In, d.Out, len(d.B), d.Out)
	}
	return nil
}

// Forward applies the layer to every row of b with one float32 matrix
// product (gemm.Sgemm, which splits the work across GOMAXPROCS goroutines
// and gives the same bits whatever their number). The result keeps b's
// Source, Offset and (a copy of) Labels.
func (d Dense) Forward(b Batch) (Batch, error) {
	if err := d.check(); err != nil {
		return Batch{}, fmt.Errorf("%s: %w", b.ID(), err)
	}
	if err := b.checkShape(); err != nil {
		return Batch{}, err
	}
	if b.Cols != d.In {
		return Batch{}, fmt.Errorf("%s: %d columns, the %dx%d layer needs %d", b.ID(), b.Cols, d.In, d.Out, d.In)
	}
	out := Batch{Source: b.Source, Offset: b.Offset, Rows: b.Rows, Cols: d.Out, X: make([]float32, b.Rows*d.Out), Labels: copyLabels(b.Labels)}
	if b.Rows == 0 {
		return out, nil
	}
	for i := 0; i < b.Rows; i++ {
		copy(out.X[i*d.Out:(i+1)*d.Out], d.B)
	}
	gemm.Sgemm(false, false, b.Rows, d.Out, d.In, 1, b.X, d.In, d.W, d.Out, 1, out.X, d.Out)
	if d.ReLU {
		gemm.ReLU(out.X)
	}
	return out, nil
}

// Softmax returns the row-wise softmax of b (numerically stable: the row
// maximum is subtracted before exponentiating, and sums are in float64). A
// NaN or infinite input is an error naming its row and column.
func Softmax(b Batch) (Batch, error) {
	if err := b.checkShape(); err != nil {
		return Batch{}, err
	}
	if b.Cols == 0 {
		return Batch{}, fmt.Errorf("%s: softmax of rows with no columns", b.ID())
	}
	if err := checkFinite(b); err != nil {
		return Batch{}, err
	}
	out := b
	out.X = make([]float32, len(b.X))
	out.Labels = copyLabels(b.Labels)
	e := make([]float64, b.Cols)
	for i := 0; i < b.Rows; i++ {
		softmaxRow(b.Row(i), out.Row(i), e)
	}
	return out, nil
}

// softmaxRow writes softmax(src) to dst; e is scratch of len(src).
func softmaxRow(src, dst []float32, e []float64) {
	m := src[0]
	for _, v := range src[1:] {
		m = max(m, v)
	}
	var sum float64
	for c, v := range src {
		e[c] = math.Exp(float64(v - m))
		sum += e[c]
	}
	for c := range src {
		dst[c] = float32(e[c] / sum)
	}
}

// Argmax returns the index of the largest value of each row (ties: the lowest
// index) as Predictions with Scores = b.X (not copied) and Classes = b.Cols.
// NaN values never win; a row of NaNs predicts class 0.
func Argmax(b Batch) Predictions {
	p := Predictions{
		Source:    b.Source,
		Offset:    b.Offset,
		Labels:    copyLabels(b.Labels),
		Predicted: make([]int32, b.Rows),
		Scores:    b.X,
		Classes:   b.Cols,
	}
	if b.Cols == 0 {
		return p
	}
	for i := 0; i < b.Rows; i++ {
		p.Predicted[i] = int32(argmax(b.Row(i)))
	}
	return p
}

func argmax(row []float32) int {
	best := 0
	for c, v := range row {
		if v > row[best] || (row[best] != row[best] && v == v) {
			best = c
		}
	}
	return best
}

// TopK returns, for each row, the indices of its k largest values in
// decreasing order of value (ties: lower index first). k must be in
// 1..b.Cols.
func TopK(b Batch, k int) ([][]int32, error) {
	if err := b.checkShape(); err != nil {
		return nil, err
	}
	if k < 1 || k > b.Cols {
		return nil, fmt.Errorf("%s: top %d of %d columns: k must be in 1..%d", b.ID(), k, b.Cols, b.Cols)
	}
	out := make([][]int32, b.Rows)
	idx := make([]int32, b.Cols)
	for i := 0; i < b.Rows; i++ {
		row := b.Row(i)
		for c := range idx {
			idx[c] = int32(c)
		}
		sort.SliceStable(idx, func(x, y int) bool { return greater(row[idx[x]], row[idx[y]]) })
		out[i] = append([]int32(nil), idx[:k]...)
	}
	return out, nil
}

// greater orders values decreasingly with NaN last.
func greater(a, b float32) bool {
	if b != b {
		return a == a
	}
	return a > b
}
