// Package onnxtest builds small ONNX models in Go, for tests of the runtime
// and of what uses it: a node, its inputs and outputs, initializers, in any
// opset, without Python.
//
//	m := onnxtest.Model(17,
//		[]*onnxpb.NodeProto{onnxtest.Node("Relu", []string{"x"}, []string{"y"})},
//		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 4)},
//		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 4)})
//	data := onnxtest.Bytes(m)
package onnxtest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// Model returns a model of the default domain at opset, with the graph's
// nodes, inputs, outputs and initializers (named arrays).
func Model(opset int, nodes []*onnxpb.NodeProto, inputs, outputs []*onnxpb.ValueInfoProto, inits ...Named) *onnxpb.ModelProto {
	ir := int64(8)
	name := "test"
	g := &onnxpb.GraphProto{Name: &name, Node: nodes, Input: inputs, Output: outputs}
	for _, in := range inits {
		g.Initializer = append(g.Initializer, onnx.TensorOf(in.Name, in.Array))
	}
	v := int64(opset)
	producer := "onnxtest"
	return &onnxpb.ModelProto{IrVersion: &ir, ProducerName: &producer, Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: &v}}}
}

// Named is an initializer: a name and its array.
type Named struct {
	Name  string
	Array nd.Array
}

// Init returns an initializer.
func Init(name string, a nd.Array) Named { return Named{name, a} }

// Bytes encodes a model as an .onnx file holds it.
func Bytes(m *onnxpb.ModelProto) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// Load parses m with the runtime (onnx.Parse).
func Load(m *onnxpb.ModelProto) (*onnx.Model, error) { return onnx.Parse(Bytes(m), "test.onnx") }

// LoadFile loads the model file at a local path with the runtime
// (onnx.Load of the file's directory).
func LoadFile(name string) (*onnx.Model, error) {
	return onnx.Load(os.DirFS(filepath.Dir(name)), filepath.Base(name))
}

// Node returns a node of op with inputs, outputs and attributes; "" in
// inputs leaves an optional input out.
func Node(op string, inputs, outputs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	name := op + "_" + fmt.Sprint(outputs)
	return &onnxpb.NodeProto{OpType: &op, Name: &name, Input: inputs, Output: outputs, Attribute: attrs}
}

// Value declares a graph input or output of type t and shape dims: -1 is a
// symbolic dimension ("N"), and no dims at all a scalar. ValueNoShape
// declares one without a shape.
func Value(name string, t nd.DType, dims ...int) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		if d < 0 {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}})
		} else {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
		}
	}
	v := valueNoShape(name, t)
	v.Type.GetTensorType().Shape = shape
	return v
}

// ValueNoShape declares a graph input or output of type t without a shape.
func ValueNoShape(name string, t nd.DType) *onnxpb.ValueInfoProto { return valueNoShape(name, t) }

func valueNoShape(name string, t nd.DType) *onnxpb.ValueInfoProto {
	et := int32(t)
	return &onnxpb.ValueInfoProto{Name: &name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: &et}}}}
}

func attr(name string, t onnxpb.AttributeProto_AttributeType) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: &t}
}

// Int is an int attribute.
func Int(name string, v int64) *onnxpb.AttributeProto {
	a := attr(name, onnxpb.AttributeProto_INT)
	a.I = &v
	return a
}

// Ints is an ints attribute.
func Ints(name string, v ...int64) *onnxpb.AttributeProto {
	a := attr(name, onnxpb.AttributeProto_INTS)
	a.Ints = v
	return a
}

// Float is a float attribute.
func Float(name string, v float32) *onnxpb.AttributeProto {
	a := attr(name, onnxpb.AttributeProto_FLOAT)
	a.F = &v
	return a
}

// Floats is a floats attribute.
func Floats(name string, v ...float32) *onnxpb.AttributeProto {
	a := attr(name, onnxpb.AttributeProto_FLOATS)
	a.Floats = v
	return a
}

// String is a string attribute.
func String(name, v string) *onnxpb.AttributeProto {
	a := attr(name, onnxpb.AttributeProto_STRING)
	a.S = []byte(v)
	return a
}

// Tensor is a tensor attribute.
func Tensor(name string, v nd.Array) *onnxpb.AttributeProto {
	a := attr(name, onnxpb.AttributeProto_TENSOR)
	a.T = onnx.TensorOf(name, v)
	return a
}

// Graph is a graph attribute (If's then_branch and else_branch, Loop's and
// Scan's body): a subgraph of nodes, its inputs and outputs and
// initializers. Its nodes may read the values of the graphs that enclose
// it by name.
func Graph(name string, nodes []*onnxpb.NodeProto, inputs, outputs []*onnxpb.ValueInfoProto, inits ...Named) *onnxpb.AttributeProto {
	a := attr(name, onnxpb.AttributeProto_GRAPH)
	gname := name
	a.G = &onnxpb.GraphProto{Name: &gname, Node: nodes, Input: inputs, Output: outputs}
	for _, in := range inits {
		a.G.Initializer = append(a.G.Initializer, onnx.TensorOf(in.Name, in.Array))
	}
	return a
}
