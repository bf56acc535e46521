package onnxstep

import (
	"math/rand/v2"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// sampleBytes returns the onnx step's sample model as an .onnx file holds
// it: x float32[N, 8] through Gemm (16 units), LayerNormalization and Gemm
// (4 units) to y float32[N, 4], opset 17, with fixed random weights.
func sampleBytes() []byte {
	r := rand.New(rand.NewPCG(18, 1))
	weights := func(shape ...int) nd.Array {
		a := nd.Zeros(nd.Float32, shape...)
		v := nd.MustAs[float32](a)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.5)
		}
		return a
	}
	value := func(name string, width int) *onnxpb.ValueInfoProto {
		et := int32(nd.Float32)
		shape := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
			{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}},
			{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(width)}}}}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: &et, Shape: shape}}}}
	}
	transB := &onnxpb.AttributeProto{Name: proto.String("transB"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(1)}
	node := func(op, name string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: in, Output: out, Attribute: attrs}
	}
	g := &onnxpb.GraphProto{Name: proto.String("sample"),
		Node: []*onnxpb.NodeProto{
			node("Gemm", "dense1", []string{"x", "w1", "b1"}, []string{"h"}, transB),
			node("LayerNormalization", "norm", []string{"h", "scale", "bias"}, []string{"hn"}),
			node("Gemm", "dense2", []string{"hn", "w2", "b2"}, []string{"y"}, transB),
		},
		Input:  []*onnxpb.ValueInfoProto{value("x", 8)},
		Output: []*onnxpb.ValueInfoProto{value("y", 4)},
		Initializer: []*onnxpb.TensorProto{
			onnx.TensorOf("w1", weights(16, 8)), onnx.TensorOf("b1", weights(16)),
			onnx.TensorOf("scale", weights(16)), onnx.TensorOf("bias", weights(16)),
			onnx.TensorOf("w2", weights(4, 16)), onnx.TensorOf("b2", weights(4)),
		}}
	m := &onnxpb.ModelProto{IrVersion: proto.Int64(8), ProducerName: proto.String("beamgpu"), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(17)}}}
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
