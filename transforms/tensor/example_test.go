package tensor_test

import (
	"bytes"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// Three 2-D clusters: class 0 near (0,0), class 1 near (10,0), class 2 near
// (0,10).
func ExampleKNN() {
	ref, err := tensor.NewReference(tensor.Batch{
		Source: "ref", Rows: 9, Cols: 2,
		X: []float32{
			0, 0, 1, 0, 0, 1,
			10, 0, 11, 0, 10, 1,
			0, 10, 1, 10, 0, 11,
		},
		Labels: []int32{0, 0, 0, 1, 1, 1, 2, 2, 2},
	}, 3)
	if err != nil {
		panic(err)
	}
	queries := tensor.Batch{Source: "queries", Rows: 3, Cols: 2, X: []float32{0.5, 0.5, 9, 1, 6, 0}}
	p, err := tensor.KNN(queries, ref, 3, tensor.WeightUniform)
	if err != nil {
		panic(err)
	}
	for i, c := range p.Predicted {
		fmt.Printf("%s row %d: class %d, votes %v\n", p.Source, i, c, p.Scores[i*3:(i+1)*3])
	}
	// Output:
	// queries row 0: class 0, votes [1 0 0]
	// queries row 1: class 1, votes [0 1 0]
	// queries row 2: class 1, votes [0.33333334 0.6666667 0]
}

func ExampleMLP_Predict() {
	// A one-layer "MLP": logits = x W + B, two inputs, two classes.
	m := &tensor.MLP{Layers: []tensor.Dense{{
		In: 2, Out: 2,
		W: []float32{1, -1, -1, 1},
		B: []float32{0, 0},
	}}}
	p, err := m.Predict(tensor.Batch{Source: "b", Rows: 2, Cols: 2, X: []float32{3, 1, 0, 2}})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Predicted)
	fmt.Printf("%.3f\n", p.Scores)
	// Output:
	// [0 1]
	// [0.982 0.018 0.018 0.982]
}

func ExampleDecodeIDX() {
	// A 2x2x2 uint8 IDX file: magic 0 0 8 3, dims 2 2 2, data.
	data := []byte{0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 64, 128, 255, 1, 2, 3, 4}
	x, err := tensor.DecodeIDX(bytesReader(data), "tiny.idx")
	if err != nil {
		panic(err)
	}
	b, _ := x.Images()
	fmt.Println(x.Dims, b.ID(), b.X[:4])
	_, err = tensor.DecodeIDX(bytesReader(data[:20]), "tiny.idx")
	fmt.Println(err)
	// Output:
	// [2 2 2] tiny.idx[0:2] [0 64 128 255]
	// tiny.idx: truncated IDX file: dimensions 2x2x2: expected 8 bytes of data, got 4
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
