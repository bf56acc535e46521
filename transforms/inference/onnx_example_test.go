package inference_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// exampleModel writes a model y = x W^T + b, x float32[N, 3] to y
// float32[N, 2] (onnxtest builds it; a real one comes from torch.onnx.export).
func exampleModel() string {
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Gemm", []string{"x", "w", "b"}, []string{"y"}, onnxtest.Int("transB", 1))},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 3)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 2)},
		onnxtest.Init("w", nd.Of([]float32{1, 0, 0, 0, 1, 1}, 2, 3)), onnxtest.Init("b", nd.Of([]float32{0, 10}, 2)))
	dir, _ := os.MkdirTemp("", "example")
	path := filepath.Join(dir, "dense.onnx")
	if err := os.WriteFile(path, onnxtest.Bytes(m), 0o644); err != nil {
		panic(err)
	}
	return path
}

func printResult(r inference.Result) {
	y, _ := r.Output("y")
	fmt.Printf("%s: y = %v\n", r.Key, nd.MustAs[float32](y))
}

// printClass prints a row's class and its carried label.
func printClass(c inference.Classification) {
	label, _ := c.Carried(inference.CarryLabel)
	fmt.Printf("%s: class %d, label %d\n", c.ID(), c.Top[0].Index, nd.MustAs[int32](label)[0])
}

func init() {
	register.Function1x0(printResult)
	register.Function1x0(printClass)
}

// ONNX loads and checks a model; its inputs and outputs are named, typed
// and shaped ("N" is the batch axis).
func ExampleONNX() {
	h, err := inference.ONNX(context.Background(), exampleModel())
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Model().Inputs[0], "->", h.Model().Outputs[0])
	fmt.Println(h.Step().Backend().Label())
	// Output:
	// x: float32[Nx3] -> y: float32[Nx2]
	// onnx[dense.onnx]
}

// RunInference runs an ONNX model on keyed examples, one row each.
func ExampleRunInference() {
	h, err := inference.ONNX(context.Background(), exampleModel())
	if err != nil {
		panic(err)
	}
	p, s := beam.NewPipelineWithRoot()
	examples := beam.Create(s, inference.Example{Key: "first", Inputs: []inference.Tensor{{Name: "x", Array: nd.Of([]float32{1, 2, 3}, 3)}}})
	results, _ := inference.RunInference(s, examples, h, batch.Params{})
	beam.ParDo0(s, printResult, results)
	if err := ptest.Run(p); err != nil {
		panic(err)
	}
	// Output: first: y = [1 15]
}

// The shipped Fashion-MNIST MLP on three test images: their rows become
// examples (RowExamples: the label carried), RunInference runs the mlp
// step, Classify takes the best class of the probabilities.
func ExampleMLP() {
	h, err := inference.MLP("../../pipelines/fashion/data/mlp-784-256-128-10.bgmlp", 784, 256, 128, 10)
	if err != nil {
		panic(err)
	}
	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	if err != nil {
		panic(err)
	}
	rows, err := tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x.Slice(0, 3))
	if err != nil {
		panic(err)
	}
	p, s := beam.NewPipelineWithRoot()
	examples, _ := inference.RowExamples(s, beam.Create(s, rows), inference.RowInput)
	results, _ := inference.RunInference(s, examples, h, batch.Params{})
	classes, _, err := inference.Classify(context.Background(), s, results, inference.OutputProbabilities, 1, "")
	if err != nil {
		panic(err)
	}
	beam.ParDo0(s, printClass, classes)
	if err := ptest.Run(p); err != nil {
		panic(err)
	}
	// Unordered output:
	// t10k-images-idx3-ubyte.gz[0]: class 9, label 9
	// t10k-images-idx3-ubyte.gz[1]: class 2, label 2
	// t10k-images-idx3-ubyte.gz[2]: class 1, label 1
}

// kNN against a labelled reference set of IDX files (here the test set
// itself, so each image is its own nearest neighbour), loaded and scaled
// once per worker process; Classify takes the vote's class.
func ExampleKNN() {
	ref := tensor.Source{Images: tensor.SampleImagesPath(), Labels: tensor.SampleLabelsPath(), Classes: 10}
	h, err := inference.KNN(ref, 1, inference.KNNScaler(tensor.Scaler{Mode: tensor.ScaleUnit}))
	if err != nil {
		panic(err)
	}
	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	if err != nil {
		panic(err)
	}
	rows, err := tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x.Slice(3, 5))
	if err != nil {
		panic(err)
	}
	p, s := beam.NewPipelineWithRoot()
	examples, _ := inference.RowExamples(s, beam.Create(s, rows), inference.RowInput, 28, 28)
	results, _ := inference.RunInference(s, examples, h, batch.Params{})
	classes, _, err := inference.Classify(context.Background(), s, results, inference.OutputClass, 1, "")
	if err != nil {
		panic(err)
	}
	beam.ParDo0(s, printClass, classes)
	if err := ptest.Run(p); err != nil {
		panic(err)
	}
	// Unordered output:
	// t10k-images-idx3-ubyte.gz[3]: class 1, label 1
	// t10k-images-idx3-ubyte.gz[4]: class 6, label 6
}

// TopK classifies a result from its scores, with labels.
func ExampleTopK() {
	r := inference.Result{Key: "img1", Outputs: []inference.Tensor{{Name: "probabilities", Array: nd.Of([]float32{0.1, 0.7, 0.2}, 3)}}}
	c, err := inference.TopK(r, "probabilities", 2, []string{"cat", "dog", "bird"})
	if err != nil {
		panic(err)
	}
	for _, cl := range c.Top {
		fmt.Printf("%s %d %s %.1f\n", c.Key, cl.Index, cl.Label, cl.Score)
	}
	// Output:
	// img1 1 dog 0.7
	// img1 2 bird 0.2
}

// sequenceModel writes a model of token rows: ids int64[N, seq] to
// y = float(ids) (float32[N, seq]) and total, y's sum over the sequence
// (float32[N]). y's sequence axis shares the input's name, so that a
// padded call is cut back to each row's length.
func sequenceModel() string {
	seq := func(v *onnxpb.ValueInfoProto) *onnxpb.ValueInfoProto {
		v.Type.GetTensorType().Shape.Dim[1].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "sequence"}
		return v
	}
	m := onnxtest.Model(17,
		[]*onnxpb.NodeProto{
			onnxtest.Node("Cast", []string{"ids"}, []string{"y"}, onnxtest.Int("to", int64(nd.Float32))),
			onnxtest.Node("ReduceSum", []string{"y", "axes"}, []string{"total"}, onnxtest.Int("keepdims", 0)),
		},
		[]*onnxpb.ValueInfoProto{seq(onnxtest.Value("ids", nd.Int64, -1, -1))},
		[]*onnxpb.ValueInfoProto{seq(onnxtest.Value("y", nd.Float32, -1, -1)), onnxtest.Value("total", nd.Float32, -1)},
		onnxtest.Init("axes", nd.Of([]int64{1}, 1)))
	dir, _ := os.MkdirTemp("", "example")
	path := filepath.Join(dir, "sequence.onnx")
	if err := os.WriteFile(path, onnxtest.Bytes(m), 0o644); err != nil {
		panic(err)
	}
	return path
}

func printSequence(r inference.Result) {
	y, _ := r.Output("y")
	total, _ := r.Output("total")
	fmt.Printf("%s: y = %v, total %v\n", r.Key, nd.MustAs[float32](y), nd.MustAs[float32](total)[0])
}

func init() { register.Function1x0(printSequence) }

// Rows of different lengths share calls: batched by length (at most 4
// tokens a call, rows x longest row), padded with 0 and cut back, each row
// its own outputs.
func ExampleRunInferenceByLength() {
	h, err := inference.ONNX(context.Background(), sequenceModel(), inference.PadRows(map[string]float64{"ids": 0}))
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Padding())
	row := func(key string, ids ...int64) inference.Example {
		return inference.Example{Key: key, Inputs: []inference.Tensor{{Name: "ids", Array: nd.Of(ids, len(ids))}}}
	}
	p, s := beam.NewPipelineWithRoot()
	examples := beam.Create(s, row("a", 1, 2, 3), row("b", 4), row("c", 5, 6))
	results, _, err := inference.TryRunInferenceByLength(s, examples, h, inference.LengthBatching{MaxBatchTokens: 4})
	if err != nil {
		panic(err)
	}
	beam.ParDo0(s, printSequence, results)
	if err := ptest.Run(p); err != nil {
		panic(err)
	}
	// Unordered output:
	// rows are padded; outputs cut back per row: y axis 1 as ids axis 1
	// a: y = [1 2 3], total 6
	// b: y = [4], total 4
	// c: y = [5 6], total 11
}
