package onnx

import (
	"fmt"
	"sort"

	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// Proto returns the model's graph as loaded (constants folded, each
// BatchNormalization that follows a Conv folded into it) as a ModelProto
// whose initializers hold no data, and the initializers' data, in the
// ModelProto's order, raw (views of the model's own, no copies). FromProto
// is its inverse: a runtime in another process (the GPU executor) gets the
// model without its file.
func (m *Model) Proto() (*onnxpb.ModelProto, [][]byte) {
	g := m.g
	name := m.Name
	gp := &onnxpb.GraphProto{Name: &name}
	var data [][]byte
	for _, v := range g.values {
		if v.init == nil {
			continue
		}
		dims := make([]int64, len(v.init.Shape))
		for i, s := range v.init.Shape {
			dims[i] = int64(s)
		}
		vname, dt := v.name, int32(v.init.Type)
		gp.Initializer = append(gp.Initializer, &onnxpb.TensorProto{Name: &vname, DataType: &dt, Dims: dims})
		data = append(data, v.init.Data)
	}
	for _, v := range m.Inputs {
		gp.Input = append(gp.Input, valueInfoProto(v))
	}
	for _, v := range m.Outputs {
		gp.Output = append(gp.Output, valueInfoProto(v))
	}
	for _, n := range g.nodes {
		np := &onnxpb.NodeProto{Name: proto.String(n.Name), OpType: proto.String(n.Op),
			Input:  append([]string{}, n.Inputs[:len(n.Inputs)-len(n.Attrs.outerNames())]...), // not the outer values its subgraphs read
			Output: append([]string{}, n.Outputs...)}
		names := make([]string, 0, len(n.Attrs.byName))
		for a := range n.Attrs.byName {
			names = append(names, a)
		}
		sort.Strings(names)
		for _, a := range names {
			np.Attribute = append(np.Attribute, n.Attrs.byName[a])
		}
		gp.Node = append(gp.Node, np)
	}
	ir, opset := m.IRVersion, int64(m.Opset)
	return &onnxpb.ModelProto{IrVersion: &ir, ProducerName: proto.String(m.Producer), Graph: gp,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: &opset}}}, data
}

func valueInfoProto(v ValueInfo) *onnxpb.ValueInfoProto {
	et := int32(v.Type)
	tt := &onnxpb.TypeProto_Tensor{ElemType: &et}
	if v.Shape != nil {
		tt.Shape = &onnxpb.TensorShapeProto{}
		for _, d := range v.Shape {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch {
			case d.Size >= 0:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d.Size)}
			case d.Param != "":
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d.Param}
			}
			tt.Shape.Dim = append(tt.Shape.Dim, dim)
		}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(v.Name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}}}
}

// FromProto builds a model from mp, checked as Load checks a file: every
// initializer's data must be in it (raw_data or typed fields; no external
// data). The model's ID and Name are the caller's to set.
func FromProto(mp *onnxpb.ModelProto) (*Model, error) {
	if mp.GetGraph() == nil {
		return nil, fmt.Errorf("onnx: not an ONNX model: no graph")
	}
	if ext := firstExternal(mp.Graph); ext != "" {
		return nil, fmt.Errorf("onnx: initializer %q is in an external data file", ext)
	}
	mem, err := newMemory(0)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return build(mp, mem)
}
