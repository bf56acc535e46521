package tensor

import (
	"fmt"
	"math"
)

// Batch is a matrix of rows: Rows x Cols float32, row-major, with optional labels.
//
// A Batch is a value: copying it copies the slice headers, not the data.
// Functions of this package never modify the X or Labels of a Batch they are
// given; they return new batches.
type Batch struct {
	Source     string    // where the rows come from (a file name), for error messages
	Offset     int       // index of the first row in Source
	Rows, Cols int       // shape of X
	X          []float32 // len Rows*Cols, row-major
	Labels     []int32   // len Rows (-1 = unknown) or nil
}

// ID names the rows of the batch, e.g. "t10k-images-idx3-ubyte.gz[0:256]";
// it implements step.Identifier.
func (b Batch) ID() string { return rangeID(b.Source, b.Offset, b.Rows) }

// Items is the number of rows; with Bytes it implements step.Sized.
func (b Batch) Items() int { return b.Rows }

// Bytes is the size of the data held: 4 bytes per value and per label.
func (b Batch) Bytes() int { return 4*len(b.X) + 4*len(b.Labels) }

// Row returns row i (relative to the batch) as a slice of X.
func (b Batch) Row(i int) []float32 { return b.X[i*b.Cols : (i+1)*b.Cols] }

// Validate checks that the shape is consistent (len(X) == Rows*Cols, Labels
// nil or one per row, labels >= -1) and that X holds no NaN or infinity. Its
// errors name the source, the row (Offset+i) and the column.
func (b Batch) Validate() error {
	if err := b.checkShape(); err != nil {
		return err
	}
	if err := b.checkLabels(); err != nil {
		return err
	}
	return checkFinite(b)
}

// checkLabels checks that every label is -1 (unknown) or more.
func (b Batch) checkLabels() error {
	for i, l := range b.Labels {
		if l < -1 {
			return fmt.Errorf("%s: row %d: label %d is negative (-1 is the only allowed unknown label)", b.Source, b.Offset+i, l)
		}
	}
	return nil
}

// checkShape checks the shape only.
func (b Batch) checkShape() error {
	if b.Rows < 0 || b.Cols < 0 {
		return fmt.Errorf("%s: negative shape %dx%d", b.ID(), b.Rows, b.Cols)
	}
	if b.Cols != 0 && b.Rows > math.MaxInt/b.Cols {
		return fmt.Errorf("%s: shape %dx%d overflows", b.ID(), b.Rows, b.Cols)
	}
	if len(b.X) != b.Rows*b.Cols {
		return fmt.Errorf("%s: shape %dx%d needs %d values, X has %d", b.ID(), b.Rows, b.Cols, b.Rows*b.Cols, len(b.X))
	}
	if b.Labels != nil && len(b.Labels) != b.Rows {
		return fmt.Errorf("%s: %d rows but %d labels", b.ID(), b.Rows, len(b.Labels))
	}
	return nil
}

// checkFinite reports the first NaN or infinity in X.
func checkFinite(b Batch) error {
	for i, v := range b.X {
		if isBad(v) {
			return fmt.Errorf("%s: row %d column %d: value is %v", b.Source, b.Offset+i/b.Cols, i%b.Cols, v)
		}
	}
	return nil
}

// isBad reports whether v is NaN or infinite: its exponent bits all set (a
// bit test, without the conversions and calls of math.IsNaN and math.IsInf:
// it runs over every input value).
func isBad(v float32) bool {
	return math.Float32bits(v)&0x7f800000 == 0x7f800000
}

// Slice returns rows [i, j) of the batch. The result shares X and Labels with
// b, and its Offset is b.Offset+i. Like slicing, it panics if the bounds are
// out of range: that is a programming error.
func (b Batch) Slice(i, j int) Batch {
	if i < 0 || j < i || j > b.Rows {
		panic(fmt.Sprintf("tensor: Slice(%d, %d) of %s with %d rows", i, j, b.ID(), b.Rows))
	}
	out := Batch{
		Source: b.Source,
		Offset: b.Offset + i,
		Rows:   j - i,
		Cols:   b.Cols,
		X:      b.X[i*b.Cols : j*b.Cols : j*b.Cols],
	}
	if b.Labels != nil {
		out.Labels = b.Labels[i:j:j]
	}
	return out
}

// Split cuts the batch into consecutive batches of at most size rows (the
// last may be shorter), sharing b's data.
func (b Batch) Split(size int) []Batch {
	if size <= 0 {
		size = b.Rows
	}
	var out []Batch
	for i := 0; i < b.Rows; i += size {
		out = append(out, b.Slice(i, min(i+size, b.Rows)))
	}
	return out
}

// Predictions is the output of classification steps.
type Predictions struct {
	Source string
	Offset int
	// Labels is copied from the input batch (-1 unknown), or nil.
	Labels []int32
	// Predicted is the class of each row.
	Predicted []int32
	// Scores is Rows x Classes, row-major: probabilities for the MLP, vote
	// shares for kNN. It may be nil.
	Scores  []float32
	Classes int
}

// ID names the rows, like Batch.ID.
func (p Predictions) ID() string { return rangeID(p.Source, p.Offset, len(p.Predicted)) }

// Items is the number of rows.
func (p Predictions) Items() int { return len(p.Predicted) }

// Bytes is the size of the data held.
func (p Predictions) Bytes() int { return 4 * (len(p.Labels) + len(p.Predicted) + len(p.Scores)) }

// Accuracy is the fraction of rows with a known label (>= 0) whose predicted
// class is that label, and the number of such rows. With no known label it
// returns 0, 0.
func (p Predictions) Accuracy() (acc float64, known int) {
	correct := 0
	for i, l := range p.Labels {
		if l < 0 || i >= len(p.Predicted) {
			continue
		}
		known++
		if p.Predicted[i] == l {
			correct++
		}
	}
	if known == 0 {
		return 0, 0
	}
	return float64(correct) / float64(known), known
}

func rangeID(source string, offset, rows int) string {
	return fmt.Sprintf("%s[%d:%d]", source, offset, offset+rows)
}

func copyLabels(l []int32) []int32 {
	if l == nil {
		return nil
	}
	return append([]int32(nil), l...)
}

// Batch returns the scores as a batch of Rows x Classes (sharing them).
func (p Predictions) Batch() Batch {
	return Batch{Source: p.Source, Offset: p.Offset, Rows: len(p.Predicted), Cols: p.Classes, X: p.Scores, Labels: p.Labels}
}
