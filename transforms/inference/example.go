package inference

import (
	"reflect"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// Tensor is a named array: one of a model's inputs or outputs.
type Tensor struct {
	Name  string
	Array nd.Array
}

// Example is one input row of RunInference: the model's inputs by name,
// each without the batch axis (a [3x224x224] image for an ONNX input
// declared [N, 3, 224, 224]), and what names it, which its Result and its
// failure carry through: a key, or a source and an index.
type Example struct {
	// Key names the example (an image's path, a record's ID); "" for an
	// unkeyed one, then named by Source and Index.
	Key string
	// Source is the input the example comes from (a file), "" for none;
	// its failures belong to it (step.Failure.Key).
	Source string
	// Index is the example's position: its row in Source, or in the
	// input.
	Index int64
	// Inputs are the model's inputs, by name, in any order.
	Inputs []Tensor
	// Carry are arrays the model does not take that the example's Result
	// (and Classification) carry through: a label, an ID.
	Carry []Tensor
}

// ID names the example in a failure: its key; else its source and index,
// "file[12]"; else "#" and its index.
func (e Example) ID() string { return exampleID(e.Key, e.Source, e.Index) }

func exampleID(key, source string, index int64) string {
	switch {
	case key != "":
		return key
	case source != "":
		return source + "[" + strconv.FormatInt(index, 10) + "]"
	}
	return "#" + strconv.FormatInt(index, 10)
}

// Items is 1: an example is one record. With Bytes it implements
// step.Sized, so that its failure counts one record.
func (e Example) Items() int { return 1 }

// Bytes is the size of the inputs' data.
func (e Example) Bytes() int {
	n := 0
	for _, t := range e.Inputs {
		n += len(t.Array.Data)
	}
	return n
}

// Input returns the input called name, ok false if there is none.
func (e Example) Input(name string) (nd.Array, bool) { return find(e.Inputs, name) }

// Carried returns the carried array called name, ok false if there is none.
func (e Example) Carried(name string) (nd.Array, bool) { return find(e.Carry, name) }

// Result is a model's outputs for one Example: the example's key, source,
// index and carried arrays, the model's ID (Model.ID: for an ONNX model
// the content of its file) and the outputs, by name, without the batch
// axis.
type Result struct {
	Key     string
	Source  string
	Index   int64
	ModelID string
	Outputs []Tensor
	Carry   []Tensor
}

// ID names the result as its example is named.
func (r Result) ID() string { return exampleID(r.Key, r.Source, r.Index) }

// Output returns the output called name, ok false if there is none.
func (r Result) Output(name string) (nd.Array, bool) { return find(r.Outputs, name) }

// Carried returns the carried array called name, ok false if there is none.
func (r Result) Carried(name string) (nd.Array, bool) { return find(r.Carry, name) }

func find(ts []Tensor, name string) (nd.Array, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t.Array, true
		}
	}
	return nd.Array{}, false
}

// failure is the failure of the example named key, source and index in
// step st: one record, belonging to its source.
func failure(st, key, source string, index int64, err error) step.Failure {
	return step.Failure{Input: exampleID(key, source, index), Step: st, Reason: err.Error(), Key: source, Items: 1}
}

func init() {
	beam.RegisterCoder(reflect.TypeOf(Example{}), EncodeExample, DecodeExample)
	beam.RegisterCoder(reflect.TypeOf(Result{}), EncodeResult, DecodeResult)
}

// Coders: an Example's and a Result's names, then its tensors as their
// names, types, shapes and raw data.

func appendTensors(b []byte, ts []Tensor) []byte {
	b = wire.AppendUvarint(b, len(ts))
	for _, t := range ts {
		b = wire.AppendString(b, t.Name)
		b = nd.AppendMeta(b, t.Array)
		b = wire.AppendBytes(b, t.Array.Data)
	}
	return b
}

func readTensors(d *wire.Decoder) []Tensor {
	n := d.Uvarint()
	var out []Tensor
	for i := 0; i < n && d.Err() == nil; i++ {
		name := d.String()
		t, shape := nd.ReadMeta(d)
		data := d.LenBytes()
		if d.Err() != nil {
			break
		}
		a, err := nd.View(t, shape, append([]byte(nil), data...))
		if err != nil {
			d.Fail("tensor %q: %v", name, err)
			break
		}
		out = append(out, Tensor{Name: name, Array: a})
	}
	return out
}

// EncodeExample is Example's Beam coder.
func EncodeExample(e Example) []byte {
	b := wire.AppendString(nil, e.Key)
	b = wire.AppendString(b, e.Source)
	b = wire.AppendUint64(b, uint64(e.Index))
	b = appendTensors(b, e.Inputs)
	return appendTensors(b, e.Carry)
}

// DecodeExample decodes what EncodeExample wrote.
func DecodeExample(b []byte) (Example, error) {
	d := wire.NewDecoder(b, "inference example")
	e := Example{Key: d.String(), Source: d.String(), Index: int64(d.Uint64())}
	e.Inputs = readTensors(d)
	e.Carry = readTensors(d)
	return e, d.Done()
}

// EncodeResult is Result's Beam coder.
func EncodeResult(r Result) []byte {
	b := wire.AppendString(nil, r.Key)
	b = wire.AppendString(b, r.Source)
	b = wire.AppendUint64(b, uint64(r.Index))
	b = wire.AppendString(b, r.ModelID)
	b = appendTensors(b, r.Outputs)
	return appendTensors(b, r.Carry)
}

// DecodeResult decodes what EncodeResult wrote.
func DecodeResult(b []byte) (Result, error) {
	d := wire.NewDecoder(b, "inference result")
	r := Result{Key: d.String(), Source: d.String(), Index: int64(d.Uint64()), ModelID: d.String()}
	r.Outputs = readTensors(d)
	r.Carry = readTensors(d)
	return r, d.Done()
}
