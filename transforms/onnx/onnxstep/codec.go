package onnxstep

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/wire"
	"google.golang.org/protobuf/proto"
)

// The onnx step's codecs. A batch's arrays cross the executor boundary raw,
// each in shared memory of its own (views, no copies), their types and
// shapes in the header; the model crosses as side data, once per content:
// its graph as a ModelProto whose initializers hold no data, and the
// initializers' data as raw arrays.

// codecVersion is the version of the encodings below.
const codecVersion = 1

// appendArrays appends the types and shapes of arrays to h and returns
// their data, raw; readArrays views the data in place (an aligned copy only
// where it is not aligned for its type).
func appendArrays(h []byte, arrays []nd.Array) ([]byte, [][]byte, error) {
	h = append(h, codecVersion)
	h = wire.AppendUvarint(h, len(arrays))
	raw := make([][]byte, len(arrays))
	for i, a := range arrays {
		if err := a.Validate(); err != nil {
			return nil, nil, fmt.Errorf("array %d: %w", i, err)
		}
		h = nd.AppendMeta(h, a)
		raw[i] = a.Data
	}
	return h, raw, nil
}

func readArrays(p step.Parts, what string) ([]nd.Array, error) {
	d := wire.NewDecoder(p.Header, what)
	if v := d.Bytes(1); d.Err() == nil && v[0] != codecVersion {
		d.Fail("version %d, want %d", v[0], codecVersion)
	}
	n := d.Uvarint()
	if d.Err() == nil && n != len(p.Arrays) {
		d.Fail("%d arrays announced, %d sent", n, len(p.Arrays))
	}
	out := make([]nd.Array, 0, min(n, 64))
	for i := 0; i < n && d.Err() == nil; i++ {
		t, shape := nd.ReadMeta(d)
		if d.Err() != nil {
			break
		}
		a, err := nd.View(t, shape, p.Arrays[i])
		if err != nil {
			d.Fail("array %d: %v", i, err)
			break
		}
		out = append(out, a)
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	return out, nil
}

// InputCodec moves the onnx step's inputs (the arrays; the model is side
// data, see StepRun).
var InputCodec = step.Codec[Input]{
	Encode: func(in Input) (step.Parts, error) {
		h, raw, err := appendArrays(nil, in.Inputs)
		if err != nil {
			return step.Parts{}, fmt.Errorf("onnx input: %w", err)
		}
		return step.Parts{Header: h, Arrays: raw}, nil
	},
	Decode: func(p step.Parts) (Input, error) {
		a, err := readArrays(p, "onnx input")
		return Input{Inputs: a}, err
	},
}

// OutputCodec moves the onnx step's outputs; it is also their Beam coder
// (package inference uses it).
var OutputCodec = step.Codec[Output]{
	Encode: func(o Output) (step.Parts, error) {
		h, raw, err := appendArrays(nil, o.Outputs)
		if err != nil {
			return step.Parts{}, fmt.Errorf("onnx output: %w", err)
		}
		return step.Parts{Header: h, Arrays: raw}, nil
	},
	Decode: func(p step.Parts) (Output, error) {
		a, err := readArrays(p, "onnx output")
		return Output{Outputs: a}, err
	},
}

// EncodeModel encodes m for the GPU executor (the onnx step's side data):
// the header holds its identity and its graph as a ModelProto, as loaded
// (constants folded), whose initializers hold no data; the arrays are the
// initializers' data, in the ModelProto's order, raw (views of the model's
// own, no copies): onnx.Model.Proto. DecodeModel is its inverse.
func EncodeModel(m *onnx.Model) step.Parts {
	mp, data := m.Proto()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(mp)
	if err != nil { // the graph came from a ModelProto: it marshals again
		panic(fmt.Sprintf("onnx: encoding model %s: %v", m.Name, err))
	}
	h := append([]byte(nil), codecVersion)
	h = wire.AppendString(h, m.ID)
	h = wire.AppendString(h, m.Name)
	h = wire.AppendBytes(h, b)
	return step.Parts{Header: h, Arrays: data}
}

// DecodeModel decodes what Model.Encode wrote: a model with the same graph,
// identity and name, checked as Parse checks a file. Its constants are
// copied out of p (which the caller may reuse).
func DecodeModel(p step.Parts) (*onnx.Model, error) {
	d := wire.NewDecoder(p.Header, "onnx model")
	if v := d.Bytes(1); d.Err() == nil && v[0] != codecVersion {
		d.Fail("version %d, want %d", v[0], codecVersion)
	}
	id, name, b := d.String(), d.String(), d.LenBytes()
	if err := d.Done(); err != nil {
		return nil, err
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		return nil, fmt.Errorf("onnx model coder: %s: %w", name, err)
	}
	if mp.Graph == nil {
		return nil, fmt.Errorf("onnx model coder: %s: no graph", name)
	}
	inits := mp.Graph.Initializer
	if len(inits) != len(p.Arrays) {
		return nil, fmt.Errorf("onnx model coder: %s: %d initializers, %d arrays", name, len(inits), len(p.Arrays))
	}
	for i, t := range inits {
		if t.RawData != nil || t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			return nil, fmt.Errorf("onnx model coder: %s: initializer %q carries data of its own", name, t.GetName())
		}
		t.RawData = p.Arrays[i]
		if t.RawData == nil {
			t.RawData = []byte{}
		}
	}
	m, err := onnx.FromProto(&mp)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s (sent to the executor): %w", name, err)
	}
	m.ID, m.Name = id, name
	return m, nil
}
