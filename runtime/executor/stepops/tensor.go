package stepops

import (
	"bytes"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/step/wire"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

func init() {
	Define(tensor.StepStandardize, Codec[tensor.StandardizeInput, tensor.Batch]{
		EncodeIn:  encodeStandardize,
		DecodeIn:  decodeStandardize,
		EncodeOut: tensor.EncodeBatch,
		DecodeOut: tensor.DecodeBatch,
		Split:     splitOn(func(in *tensor.StandardizeInput) *tensor.Batch { return &in.Batch }),
		Merge:     mergeBatches,
	})
	Define(tensor.StepDense, Codec[tensor.DenseInput, tensor.Batch]{
		EncodeIn:  func(in tensor.DenseInput) ([]byte, error) { return tensor.EncodeBatch(in.Batch) },
		DecodeIn:  decodeDense,
		EncodeOut: tensor.EncodeBatch,
		DecodeOut: tensor.DecodeBatch,
		Side: func(in tensor.DenseInput) any {
			if len(in.Layer.W) == 0 {
				return nil
			}
			return &in.Layer.W[0] // the layer's weights, shared by every batch of a DoFn
		},
		EncodeSide: func(in tensor.DenseInput) ([]byte, error) { return encodeLayer(in.Layer), nil },
		DecodeSide: func(b []byte) (any, error) { return decodeLayer(b) },
		Split:      splitOn(func(in *tensor.DenseInput) *tensor.Batch { return &in.Batch }),
		Merge:      mergeBatches,
	})
	Define(tensor.StepSoftmax, Codec[tensor.Batch, tensor.Batch]{
		EncodeIn:  tensor.EncodeBatch,
		DecodeIn:  func(b []byte, _ any) (tensor.Batch, error) { return tensor.DecodeBatch(b) },
		EncodeOut: tensor.EncodeBatch,
		DecodeOut: tensor.DecodeBatch,
		Split:     splitBatch,
		Merge:     mergeBatches,
	})
	Define(tensor.StepArgmax, Codec[tensor.Batch, tensor.Predictions]{
		EncodeIn:  tensor.EncodeBatch,
		DecodeIn:  func(b []byte, _ any) (tensor.Batch, error) { return tensor.DecodeBatch(b) },
		EncodeOut: tensor.EncodePredictions,
		DecodeOut: tensor.DecodePredictions,
		Split:     splitBatch,
		Merge:     mergePredictions,
	})
	Define(tensor.StepTopK, Codec[tensor.TopKInput, tensor.Ranked]{
		EncodeIn:  encodeTopK,
		DecodeIn:  decodeTopK,
		EncodeOut: encodeRanked,
		DecodeOut: decodeRanked,
	})
	Define(tensor.StepKNN, Codec[tensor.KNNInput, tensor.Predictions]{
		EncodeIn:   encodeKNN,
		DecodeIn:   decodeKNN,
		EncodeOut:  tensor.EncodePredictions,
		DecodeOut:  tensor.DecodePredictions,
		Side:       func(in tensor.KNNInput) any { return in.Ref },
		EncodeSide: func(in tensor.KNNInput) ([]byte, error) { return encodeReference(in.Ref) },
		DecodeSide: func(b []byte) (any, error) { return decodeReference(b) },
		Split:      splitOn(func(in *tensor.KNNInput) *tensor.Batch { return &in.Query }),
		Merge:      mergePredictions,
	})
	Define(tensor.StepMLP, Codec[tensor.MLPInput, tensor.Predictions]{
		EncodeIn:  func(in tensor.MLPInput) ([]byte, error) { return tensor.EncodeBatch(in.Batch) },
		DecodeIn:  decodeMLPInput,
		EncodeOut: tensor.EncodePredictions,
		DecodeOut: tensor.DecodePredictions,
		Side:      func(in tensor.MLPInput) any { return in.Model },
		EncodeSide: func(in tensor.MLPInput) ([]byte, error) {
			if in.Model == nil {
				return nil, fmt.Errorf("%s: no model", in.Batch.ID())
			}
			var buf bytes.Buffer
			_, err := in.Model.WriteTo(&buf)
			return buf.Bytes(), err
		},
		DecodeSide: func(b []byte) (any, error) { return tensor.ReadMLP(bytes.NewReader(b), "model sent to the executor") },
		Split:      splitOn(func(in *tensor.MLPInput) *tensor.Batch { return &in.Batch }),
		Merge:      mergePredictions,
	})
}

// appendBatch and readBatch frame a batch inside a larger input.
func appendBatch(b []byte, x tensor.Batch) ([]byte, error) {
	enc, err := tensor.EncodeBatch(x)
	return wire.AppendBytes(b, enc), err
}

func readBatch(d *wire.Decoder) (tensor.Batch, error) {
	raw := d.LenBytes()
	if err := d.Err(); err != nil {
		return tensor.Batch{}, err
	}
	return tensor.DecodeBatch(raw)
}

func encodeStandardize(in tensor.StandardizeInput) ([]byte, error) {
	b, err := appendBatch(nil, in.Batch)
	b = wire.AppendString(b, in.Scaler.Mode)
	b = wire.AppendPlane(wire.AppendUvarint(b, len(in.Scaler.Mean)), in.Scaler.Mean)
	b = wire.AppendPlane(wire.AppendUvarint(b, len(in.Scaler.Std)), in.Scaler.Std)
	return b, err
}

func decodeStandardize(b []byte, _ any) (tensor.StandardizeInput, error) {
	d := wire.NewDecoder(b, "standardize input")
	x, err := readBatch(d)
	if err != nil {
		return tensor.StandardizeInput{}, err
	}
	sc := tensor.Scaler{Mode: d.String()}
	if n := d.Uvarint(); n > 0 {
		sc.Mean = wire.Plane[float32](d, n)
	}
	if n := d.Uvarint(); n > 0 {
		sc.Std = wire.Plane[float32](d, n)
	}
	return tensor.StandardizeInput{Batch: x, Scaler: sc}, d.Done()
}

func encodeLayer(l tensor.Dense) []byte {
	b := wire.AppendUvarint(nil, l.In)
	b = wire.AppendUvarint(b, l.Out)
	relu := 0
	if l.ReLU {
		relu = 1
	}
	b = wire.AppendUvarint(b, relu)
	b = wire.AppendPlane(wire.AppendUvarint(b, len(l.W)), l.W)
	return wire.AppendPlane(wire.AppendUvarint(b, len(l.B)), l.B)
}

func decodeLayer(b []byte) (tensor.Dense, error) {
	d := wire.NewDecoder(b, "dense layer")
	l := tensor.Dense{In: d.Uvarint(), Out: d.Uvarint(), ReLU: d.Uvarint() == 1}
	l.W = wire.Plane[float32](d, d.Uvarint())
	l.B = wire.Plane[float32](d, d.Uvarint())
	return l, d.Done()
}

func decodeDense(b []byte, side any) (tensor.DenseInput, error) {
	l, ok := side.(tensor.Dense)
	if !ok {
		return tensor.DenseInput{}, fmt.Errorf("dense: no layer sent")
	}
	x, err := tensor.DecodeBatch(b)
	return tensor.DenseInput{Batch: x, Layer: l}, err
}

func encodeTopK(in tensor.TopKInput) ([]byte, error) {
	b, err := appendBatch(nil, in.Batch)
	return wire.AppendUvarint(b, in.K), err
}

func decodeTopK(b []byte, _ any) (tensor.TopKInput, error) {
	d := wire.NewDecoder(b, "topk input")
	x, err := readBatch(d)
	if err != nil {
		return tensor.TopKInput{}, err
	}
	return tensor.TopKInput{Batch: x, K: d.Uvarint()}, d.Done()
}

func encodeRanked(r tensor.Ranked) ([]byte, error) {
	k := 0
	if len(r.Top) > 0 {
		k = len(r.Top[0])
	}
	b := wire.AppendString(nil, r.Source)
	b = wire.AppendUvarint(b, r.Offset)
	b = wire.AppendUvarint(b, len(r.Top))
	b = wire.AppendUvarint(b, k)
	for _, row := range r.Top {
		if len(row) != k {
			return nil, fmt.Errorf("topk output: rows of %d and %d classes", k, len(row))
		}
		b = wire.AppendPlane(b, row)
	}
	return b, nil
}

func decodeRanked(b []byte) (tensor.Ranked, error) {
	d := wire.NewDecoder(b, "topk output")
	r := tensor.Ranked{Source: d.String(), Offset: d.Uvarint()}
	rows, k := d.Uvarint(), d.Uvarint()
	for i := 0; i < rows && d.Err() == nil; i++ {
		r.Top = append(r.Top, wire.Plane[int32](d, k))
	}
	return r, d.Done()
}

func encodeKNN(in tensor.KNNInput) ([]byte, error) {
	b, err := appendBatch(nil, in.Query)
	b = wire.AppendUvarint(b, in.K)
	return wire.AppendString(b, in.Weights), err
}

func decodeKNN(b []byte, side any) (tensor.KNNInput, error) {
	ref, ok := side.(*tensor.Reference)
	if !ok {
		return tensor.KNNInput{}, fmt.Errorf("knn: no reference set sent")
	}
	d := wire.NewDecoder(b, "knn input")
	q, err := readBatch(d)
	if err != nil {
		return tensor.KNNInput{}, err
	}
	in := tensor.KNNInput{Query: q, Ref: ref, K: d.Uvarint(), Weights: d.String()}
	return in, d.Done()
}

func encodeReference(r *tensor.Reference) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("knn: no reference set")
	}
	b, err := appendBatch(nil, tensor.Batch{Source: "reference", Rows: r.Rows, Cols: r.Cols, X: r.X, Labels: r.Labels})
	return wire.AppendUvarint(b, r.Classes), err
}

func decodeReference(b []byte) (*tensor.Reference, error) {
	d := wire.NewDecoder(b, "knn reference")
	x, err := readBatch(d)
	if err != nil {
		return nil, err
	}
	classes := d.Uvarint()
	if err := d.Done(); err != nil {
		return nil, err
	}
	return tensor.NewReference(x, classes)
}

func decodeMLPInput(b []byte, side any) (tensor.MLPInput, error) {
	m, ok := side.(*tensor.MLP)
	if !ok {
		return tensor.MLPInput{}, fmt.Errorf("mlp: no model sent")
	}
	x, err := tensor.DecodeBatch(b)
	return tensor.MLPInput{Batch: x, Model: m}, err
}
