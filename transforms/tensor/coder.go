package tensor

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/transforms/step/wire"
)

// Batch and Predictions carry the bulk of a pipeline's bytes: they have
// compact coders (the arrays as raw little-endian bytes).
func init() {
	beam.RegisterCoder(reflect.TypeOf(Batch{}), EncodeBatch, DecodeBatch)
	beam.RegisterCoder(reflect.TypeOf(Predictions{}), EncodePredictions, DecodePredictions)
}

func appendInts(b []byte, p []int32) []byte {
	if p == nil {
		return wire.AppendUvarint(b, 0)
	}
	return wire.AppendPlane(wire.AppendUvarint(b, len(p)+1), p)
}

func readInts(d *wire.Decoder) []int32 {
	n := d.Uvarint()
	if n == 0 {
		return nil
	}
	return wire.Plane[int32](d, n-1)
}

// EncodeBatch is the coder of Batch.
func EncodeBatch(b Batch) ([]byte, error) {
	if err := b.checkShape(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, 32+len(b.Source)+4*len(b.X)+4*len(b.Labels))
	out = wire.AppendString(out, b.Source)
	out = wire.AppendUvarint(out, b.Offset)
	out = wire.AppendUvarint(out, b.Rows)
	out = wire.AppendUvarint(out, b.Cols)
	out = wire.AppendPlane(out, b.X)
	return appendInts(out, b.Labels), nil
}

// DecodeBatch is the decoder of Batch.
func DecodeBatch(data []byte) (Batch, error) {
	d := wire.NewDecoder(data, "tensor Batch")
	b := Batch{Source: d.String(), Offset: d.Uvarint(), Rows: d.Uvarint(), Cols: d.Uvarint()}
	if d.Err() == nil && b.Cols > 0 && b.Rows > (1<<31)/4/b.Cols {
		d.Fail("%d x %d too large", b.Rows, b.Cols)
	}
	b.X = wire.Plane[float32](d, b.Rows*b.Cols)
	b.Labels = readInts(d)
	if err := d.Done(); err != nil {
		return Batch{}, err
	}
	if err := b.checkShape(); err != nil {
		return Batch{}, fmt.Errorf("tensor Batch coder: %w", err)
	}
	return b, nil
}

// EncodePredictions is the coder of Predictions.
func EncodePredictions(p Predictions) ([]byte, error) {
	out := make([]byte, 0, 32+len(p.Source)+4*(len(p.Labels)+len(p.Predicted)+len(p.Scores)))
	out = wire.AppendString(out, p.Source)
	out = wire.AppendUvarint(out, p.Offset)
	out = wire.AppendUvarint(out, p.Classes)
	out = appendInts(out, p.Labels)
	out = appendInts(out, p.Predicted)
	out = wire.AppendUvarint(out, len(p.Scores))
	return wire.AppendPlane(out, p.Scores), nil
}

// DecodePredictions is the decoder of Predictions.
func DecodePredictions(data []byte) (Predictions, error) {
	d := wire.NewDecoder(data, "tensor Predictions")
	p := Predictions{Source: d.String(), Offset: d.Uvarint(), Classes: d.Uvarint()}
	p.Labels = readInts(d)
	p.Predicted = readInts(d)
	if n := d.Uvarint(); n > 0 {
		p.Scores = wire.Plane[float32](d, n)
	}
	return p, d.Done()
}
