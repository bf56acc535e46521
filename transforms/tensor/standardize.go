package tensor

import (
	"fmt"
	"math"
)

// Scaler modes.
const (
	ScaleUnit   = "unit"   // x / 255: pixels 0..255 to 0..1
	ScaleZScore = "zscore" // (x - Mean[c]) / Std[c] per column c
)

// StdFloor is the smallest standard deviation FitScaler records, so that a
// constant column (the corners of the images) is not divided by zero.
const StdFloor = 1e-6

// Scaler standardises the columns of a batch.
type Scaler struct {
	Mode      string    // ScaleUnit or ScaleZScore
	Mean, Std []float32 // per column, for ScaleZScore
}

// FitScaler computes the per-column mean and standard deviation of b (in
// float64, population standard deviation, floored at StdFloor) and returns a
// ScaleZScore scaler.
func FitScaler(b Batch) Scaler {
	sum := make([]float64, b.Cols)
	sq := make([]float64, b.Cols)
	for i := 0; i < b.Rows; i++ {
		for c, v := range b.Row(i) {
			sum[c] += float64(v)
		}
	}
	n := float64(max(b.Rows, 1))
	s := Scaler{Mode: ScaleZScore, Mean: make([]float32, b.Cols), Std: make([]float32, b.Cols)}
	for c := range sum {
		sum[c] /= n
	}
	for i := 0; i < b.Rows; i++ {
		for c, v := range b.Row(i) {
			d := float64(v) - sum[c]
			sq[c] += d * d
		}
	}
	for c := range sum {
		s.Mean[c] = float32(sum[c])
		s.Std[c] = float32(max(math.Sqrt(sq[c]/n), StdFloor))
	}
	return s
}

// Apply returns a scaled copy of b. It fails on a NaN or infinite input
// (naming the row Offset+i and the column), on a column count that does not
// match a ScaleZScore scaler, and on an unknown mode.
func (s Scaler) Apply(b Batch) (Batch, error) {
	if err := b.checkShape(); err != nil {
		return Batch{}, err
	}
	if err := checkFinite(b); err != nil {
		return Batch{}, err
	}
	out := b
	out.X = make([]float32, len(b.X))
	out.Labels = copyLabels(b.Labels)
	switch s.Mode {
	case ScaleUnit:
		for i, v := range b.X {
			out.X[i] = v / 255
		}
	case ScaleZScore:
		if len(s.Mean) != b.Cols || len(s.Std) != b.Cols {
			return Batch{}, fmt.Errorf("%s: scaler has %d means and %d stds, the batch has %d columns", b.ID(), len(s.Mean), len(s.Std), b.Cols)
		}
		for i := 0; i < b.Rows; i++ {
			row, dst := b.Row(i), out.Row(i)
			for c, v := range row {
				dst[c] = (v - s.Mean[c]) / s.Std[c]
			}
		}
	default:
		return Batch{}, fmt.Errorf("%s: unknown scaler mode %q (want %q or %q)", b.ID(), s.Mode, ScaleUnit, ScaleZScore)
	}
	return out, nil
}
