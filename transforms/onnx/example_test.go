package onnx_test

import (
	"fmt"
	"log"
	"os"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// Load reads a model through an io/fs.FS: here the Fashion-MNIST CNN that
// the fashion pipeline ships. The model declares its inputs and outputs;
// batch is its batch axis.
func ExampleLoad() {
	m, err := onnx.Load(os.DirFS("../../pipelines/fashion/data"), "cnn-fashion.onnx")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Name, "opset", m.Opset)
	fmt.Println("in: ", m.Inputs[0])
	fmt.Println("out:", m.Outputs[0])
	fmt.Println("operators:", m.OpsUsed())
	// Output:
	// cnn-fashion.onnx opset 17
	// in:  input: float32[batchx1x28x28]
	// out: logits: float32[batchx10]
	// operators: [Conv Flatten Gemm MaxPool Relu]
}

// Model.Run computes a model's outputs on the CPU: here the CNN's scores
// for the first eight Fashion-MNIST test images, in one batch, and the
// class of each, against the test set's labels.
func ExampleModel_Run() {
	m, err := onnx.Load(os.DirFS("../../pipelines/fashion/data"), "cnn-fashion.onnx")
	if err != nil {
		log.Fatal(err)
	}
	test, err := tensor.ReadDataset("../../pipelines/fashion/data/t10k-images-idx3-ubyte.gz",
		"../../pipelines/fashion/data/t10k-labels-idx1-ubyte.gz")
	if err != nil {
		log.Fatal(err)
	}
	const rows = 8
	pixels := make([]float32, rows*28*28)
	for i, v := range test.X[:len(pixels)] {
		pixels[i] = v / 255 // the CNN was trained on [0, 1]
	}
	out, err := m.Run([]nd.Array{nd.Of(pixels, rows, 1, 28, 28)})
	if err != nil {
		log.Fatal(err)
	}
	logits := nd.MustAs[float32](out[0]) // rows x 10
	for r := range rows {
		best := 0
		for c, v := range logits[r*10 : r*10+10] {
			if v > logits[r*10+best] {
				best = c
			}
		}
		fmt.Printf("image %d: class %d, label %d\n", r, best, test.Labels[r])
	}
	// Output:
	// image 0: class 9, label 9
	// image 1: class 2, label 2
	// image 2: class 1, label 1
	// image 3: class 1, label 1
	// image 4: class 6, label 6
	// image 5: class 1, label 1
	// image 6: class 4, label 4
	// image 7: class 6, label 6
}

// Plan.StepOps shows what a plan runs: here the Fashion-MNIST CNN's for
// batches of 4, each Conv and the first Gemm with the Relu after it one
// step.
func ExamplePlan_StepOps() {
	m, err := onnx.Load(os.DirFS("../../pipelines/fashion/data"), "cnn-fashion.onnx")
	if err != nil {
		log.Fatal(err)
	}
	p, err := m.Plan([]nd.Array{nd.Zeros(nd.Float32, 4, 1, 28, 28)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.StepOps())
	// Output:
	// [Conv+Relu MaxPool Conv+Relu MaxPool Conv+Relu MaxPool Flatten Gemm+Relu Gemm]
}

// A model with control flow runs as any other: here a TorchScript module
// exported by PyTorch, whose Python loop appends each step of a recurrent
// cell to a list and then stacks it (a Loop and a sequence, which the
// loader makes the Loop's scan output). The loop's trip count is the
// input's second dimension.
func ExampleModel_Run_loop() {
	m, err := onnx.Load(os.DirFS("testdata/flow/torch_list_loop_opset16"), "model.onnx")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("operators:", m.OpsUsed())
	for _, steps := range []int{5, 2} {
		out, err := m.Run([]nd.Array{nd.Zeros(nd.Float32, 3, steps, 8)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("x 3x%dx8 -> stacked %v, joined %v\n", steps, out[0].Shape, out[1].Shape)
	}
	// Output:
	// operators: [ConcatFromSequence Gather Loop Shape]
	// x 3x5x8 -> stacked [3 5 8], joined [3 40]
	// x 3x2x8 -> stacked [3 2 8], joined [3 16]
}

// Plan.RunInto runs a plan into arrays the caller keeps: a pipeline's
// batches of one shape then allocate nothing after the first. Here the
// CNN's scores for batches of 8 blank images, in one output array reused.
func ExamplePlan_RunInto() {
	m, err := onnx.Load(os.DirFS("../../pipelines/fashion/data"), "cnn-fashion.onnx")
	if err != nil {
		log.Fatal(err)
	}
	in := []nd.Array{nd.Zeros(nd.Float32, 8, 1, 28, 28)}
	p, err := m.Plan(in) // one plan per input shape: its workspace, its packed weights
	if err != nil {
		log.Fatal(err)
	}
	metas, err := p.OutputMeta()
	if err != nil {
		log.Fatal(err)
	}
	out := []nd.Array{nd.Zeros(m.Outputs[0].Type, metas[0].Shape...)}
	for range 3 { // each batch: new pixels into in[0], the scores in out[0]
		if err := p.RunInto(in, out); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(out[0].Type, nd.ShapeString(out[0].Shape))
	// Output:
	// float32 [8x10]
}
