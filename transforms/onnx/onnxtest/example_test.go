package onnxtest_test

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
)

// A one-node model, encoded as an .onnx file holds it, loaded and run.
func ExampleModel() {
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Relu", []string{"x"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 4)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 4)})
	data := onnxtest.Bytes(m)
	model, err := onnx.Parse(data, "relu.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := model.Run([]nd.Array{nd.Of([]float32{-2, -1, 1, 2}, 1, 4)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(nd.MustAs[float32](out[0]))
	// Output: [0 0 1 2]
}
