package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Size (opsets 1, 13, 19, 21): the number of elements of its input, an
// int64 scalar known before the run (the plan folds it). Shrink (9):
// y = x + bias where x < -lambd, x - bias where x > lambd, else 0 (lambd
// default 0.5, bias 0), computed in float64 and rounded to x's type, which
// may be any number type. Size's device launch copies the known value up;
// Shrink of float32 is shrink_f32 (ops_size.cu) on the device.

func init() {
	RegisterOp(OpDef{Name: "Size", Versions: []int{1, 13, 19, 21}, New: newSize})
	RegisterOp(OpDef{Name: "Shrink", Versions: []int{9}, New: newShrink})
}

type sizeOp struct{}

func newSize(n *Node) (Kernel, error) { return sizeOp{}, n.CheckArity(1, 1, 1, 1) }

func (sizeOp) Infer(in []Meta) ([]Meta, error) {
	v := nd.Scalar(int64(numel(in[0].Shape)))
	return []Meta{{Type: nd.Int64, Shape: []int{}, Value: &v}}, nil
}

func (sizeOp) Run(in, out []nd.Array) error {
	nd.MustAs[int64](out[0])[0] = int64(numel(in[0].Shape))
	return nil
}

type shrink struct{ lambd, bias float64 }

func newShrink(n *Node) (Kernel, error) {
	k := &shrink{lambd: float64(n.Attrs.Float("lambd", 0.5)), bias: float64(n.Attrs.Float("bias", 0))}
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return k, n.Attrs.Err()
}

func (k *shrink) Infer(in []Meta) ([]Meta, error) {
	if !isNumeric(in[0].Type) {
		return nil, fmt.Errorf("input x is %v: Shrink takes a number type", in[0].Type)
	}
	return []Meta{{Type: in[0].Type, Shape: in[0].Shape}}, nil
}

func (k *shrink) Run(in, out []nd.Array) error {
	xs := nd.Float64s(in[0])
	ys := make([]float64, len(xs))
	for i, v := range xs {
		switch {
		case v < -k.lambd:
			ys[i] = v + k.bias
		case v > k.lambd:
			ys[i] = v - k.bias
		}
	}
	if !in[0].Type.IsFloat() {
		for i, v := range ys {
			ys[i] = math.Round(v)
		}
	}
	nd.ConvertInto(out[0], nd.Of(ys, in[0].Shape...))
	return nil
}
