package tensor

import (
	"errors"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// The codecs of the tensor types: a header and the arrays raw (wire.Parts),
// for both boundaries a batch crosses, the GPU executor's (each array in
// shared memory of its own, viewed in place) and Beam's (EncodeBatch and
// DecodeBatch are the Beam coders, registered by package tensorbeam).

// codecVersion is the version of the tensor types' encodings.
const codecVersion = 2

// maxValues bounds the values a decoded batch may announce, so a corrupt
// header cannot make the decoder allocate without end.
const maxValues = 1 << 31

// appendBatchHeader appends b's header and returns its arrays: X, then the
// labels if it has them.
func appendBatchHeader(h []byte, b Batch) ([]byte, [][]byte, error) {
	if err := b.checkShape(); err != nil {
		return nil, nil, err
	}
	h = append(h, codecVersion)
	h = wire.AppendString(h, b.Source)
	h = wire.AppendUvarint(h, b.Offset)
	h = wire.AppendUvarint(h, b.Rows)
	h = wire.AppendUvarint(h, b.Cols)
	arrays := [][]byte{wire.Array(b.X)}
	if b.Labels != nil {
		h = wire.AppendUvarint(h, 1)
		arrays = append(arrays, wire.Array(b.Labels))
	} else {
		h = wire.AppendUvarint(h, 0)
	}
	return h, arrays, nil
}

// readBatch reads a batch header from d and its arrays from the front of
// arrays, and returns the arrays left.
func readBatch(d *wire.Decoder, arrays [][]byte, what string) (Batch, [][]byte) {
	if v := d.Bytes(1); d.Err() == nil && v[0] != codecVersion {
		d.Fail("version %d, want %d", v[0], codecVersion)
	}
	b := Batch{Source: d.String(), Offset: d.Uvarint(), Rows: d.Uvarint(), Cols: d.Uvarint()}
	labels := d.Uvarint() == 1
	if d.Err() != nil {
		return Batch{}, nil
	}
	if b.Cols > 0 && b.Rows > maxValues/b.Cols {
		d.Fail("%d x %d too large", b.Rows, b.Cols)
		return Batch{}, nil
	}
	need := 1
	if labels {
		need = 2
	}
	if len(arrays) < need {
		d.Fail("%d arrays, want %d", len(arrays), need)
		return Batch{}, nil
	}
	var err error
	if b.X, err = wire.View[float32](arrays[0], b.Rows*b.Cols, what+" values"); err != nil {
		d.Fail("%v", err)
		return Batch{}, nil
	}
	if labels {
		if b.Labels, err = wire.View[int32](arrays[1], b.Rows, what+" labels"); err != nil {
			d.Fail("%v", err)
			return Batch{}, nil
		}
	}
	return b, arrays[need:]
}

// done checks that the header and the arrays were all read.
func done(d *wire.Decoder, left [][]byte) error {
	if d.Err() == nil && len(left) != 0 {
		d.Fail("%d arrays left over", len(left))
	}
	return d.Done()
}

// BatchCodec moves batches: the shape in the header, X and the labels raw.
var BatchCodec = step.Codec[Batch]{
	Encode: func(b Batch) (step.Parts, error) {
		h, a, err := appendBatchHeader(nil, b)
		return step.Parts{Header: h, Arrays: a}, err
	},
	Decode: func(p step.Parts) (Batch, error) {
		d := wire.NewDecoder(p.Header, "tensor Batch")
		b, left := readBatch(d, p.Arrays, "tensor Batch")
		if err := done(d, left); err != nil {
			return Batch{}, err
		}
		if err := b.checkShape(); err != nil {
			return Batch{}, fmt.Errorf("tensor Batch coder: %w", err)
		}
		return b, nil
	},
}

const (
	predLabels = 1 << iota
	predScores
)

// PredictionsCodec moves predictions: the predicted classes, labels and
// scores raw.
var PredictionsCodec = step.Codec[Predictions]{
	Encode: func(p Predictions) (step.Parts, error) {
		rows := len(p.Predicted)
		if p.Labels != nil && len(p.Labels) != rows || p.Scores != nil && len(p.Scores) != rows*p.Classes {
			return step.Parts{}, fmt.Errorf("tensor Predictions coder: %s: %d predictions, %d labels, %d scores of %d classes",
				p.ID(), rows, len(p.Labels), len(p.Scores), p.Classes)
		}
		h := append([]byte(nil), codecVersion)
		h = wire.AppendString(h, p.Source)
		h = wire.AppendUvarint(h, p.Offset)
		h = wire.AppendUvarint(h, p.Classes)
		h = wire.AppendUvarint(h, rows)
		flags := 0
		arrays := [][]byte{wire.Array(p.Predicted)}
		if p.Labels != nil {
			flags |= predLabels
			arrays = append(arrays, wire.Array(p.Labels))
		}
		if p.Scores != nil {
			flags |= predScores
			arrays = append(arrays, wire.Array(p.Scores))
		}
		return step.Parts{Header: wire.AppendUvarint(h, flags), Arrays: arrays}, nil
	},
	Decode: func(parts step.Parts) (Predictions, error) {
		d := wire.NewDecoder(parts.Header, "tensor Predictions")
		if v := d.Bytes(1); d.Err() == nil && v[0] != codecVersion {
			d.Fail("version %d, want %d", v[0], codecVersion)
		}
		p := Predictions{Source: d.String(), Offset: d.Uvarint(), Classes: d.Uvarint()}
		rows, flags := d.Uvarint(), d.Uvarint()
		if d.Err() == nil && p.Classes > 0 && rows > maxValues/p.Classes {
			d.Fail("%d x %d too large", rows, p.Classes)
		}
		arrays := parts.Arrays
		next := func(n int, what string) []byte {
			if d.Err() != nil {
				return nil
			}
			if len(arrays) == 0 {
				d.Fail("no array for the %s", what)
				return nil
			}
			a := arrays[0]
			arrays = arrays[1:]
			return a
		}
		view := func(a []byte, n int, what string) []int32 {
			v, err := wire.View[int32](a, n, "tensor Predictions "+what)
			if err != nil && d.Err() == nil {
				d.Fail("%v", err)
			}
			return v
		}
		p.Predicted = view(next(rows, "classes"), rows, "classes")
		if flags&predLabels != 0 {
			p.Labels = view(next(rows, "labels"), rows, "labels")
		}
		if flags&predScores != 0 {
			s, err := wire.View[float32](next(rows*p.Classes, "scores"), rows*p.Classes, "tensor Predictions scores")
			if err != nil && d.Err() == nil {
				d.Fail("%v", err)
			}
			p.Scores = s
		}
		if err := done(d, arrays); err != nil {
			return Predictions{}, err
		}
		return p, nil
	},
}

// EncodeBatch, DecodeBatch, EncodePredictions and DecodePredictions are the
// codecs as one buffer each (Codec.Marshal): the Beam coders.
func EncodeBatch(b Batch) ([]byte, error)                { return BatchCodec.Marshal(b) }
func DecodeBatch(data []byte) (Batch, error)             { return BatchCodec.Unmarshal(data) }
func EncodePredictions(p Predictions) ([]byte, error)    { return PredictionsCodec.Marshal(p) }
func DecodePredictions(data []byte) (Predictions, error) { return PredictionsCodec.Unmarshal(data) }

// batchWith is the codec of an input made of a batch and small parameters
// that travel in the header.
func batchWith[In any](what string, batch func(In) Batch, put func([]byte, In) []byte,
	get func(*wire.Decoder, Batch) In) step.Codec[In] {
	return step.Codec[In]{
		Encode: func(in In) (step.Parts, error) {
			h, a, err := appendBatchHeader(nil, batch(in))
			if err != nil {
				return step.Parts{}, err
			}
			return step.Parts{Header: put(h, in), Arrays: a}, nil
		},
		Decode: func(p step.Parts) (In, error) {
			d := wire.NewDecoder(p.Header, what)
			b, left := readBatch(d, p.Arrays, what)
			in := get(d, b)
			if err := done(d, left); err != nil {
				var zero In
				return zero, err
			}
			return in, nil
		},
	}
}

// encodeLayers encodes layers: their shapes in a header, the weights and
// biases raw.
func encodeLayers(layers []Dense) step.Parts {
	h := wire.AppendUvarint(nil, len(layers))
	var arrays [][]byte
	for _, l := range layers {
		h = wire.AppendUvarint(h, l.In)
		h = wire.AppendUvarint(h, l.Out)
		relu := 0
		if l.ReLU {
			relu = 1
		}
		h = wire.AppendUvarint(h, relu)
		arrays = append(arrays, wire.Array(l.W), wire.Array(l.B))
	}
	return step.Parts{Header: h, Arrays: arrays}
}

func decodeLayers(p step.Parts, what string) ([]Dense, error) {
	d := wire.NewDecoder(p.Header, what)
	n := d.Uvarint()
	if d.Err() == nil && 2*n != len(p.Arrays) {
		d.Fail("%d layers, %d arrays", n, len(p.Arrays))
	}
	var layers []Dense
	for i := 0; i < n && d.Err() == nil; i++ {
		l := Dense{In: d.Uvarint(), Out: d.Uvarint(), ReLU: d.Uvarint() == 1}
		if d.Err() != nil || l.In < 1 || l.Out < 1 || l.In > maxValues/l.Out {
			d.Fail("layer %d of %dx%d", i, l.In, l.Out)
			break
		}
		var err error
		if l.W, err = wire.View[float32](p.Arrays[2*i], l.In*l.Out, what+" weights"); err != nil {
			d.Fail("%v", err)
			break
		}
		if l.B, err = wire.View[float32](p.Arrays[2*i+1], l.Out, what+" biases"); err != nil {
			d.Fail("%v", err)
			break
		}
		layers = append(layers, l)
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	return layers, nil
}

var errNoSide = errors.New("no side data")
