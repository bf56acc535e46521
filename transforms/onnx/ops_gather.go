package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Gather (opsets 1, 11 negative indices, 13): data's slices along axis
// picked by indices (int32 or int64), each slice copied whole.

func init() {
	RegisterOp(OpDef{Name: "Gather", Versions: []int{1, 11, 13}, New: newGather})
}

type gather struct{ axis int64 }

func newGather(n *Node) (Kernel, error) {
	return &gather{axis: n.Attrs.Int("axis", 0)}, n.CheckArity(2, 2, 1, 1)
}

func (k *gather) Infer(in []Meta) ([]Meta, error) {
	data, idx := in[0].Shape, in[1].Shape
	axis, err := NormAxis(int(k.axis), len(data))
	if err != nil {
		return nil, err
	}
	if t := in[1].Type; t != nd.Int32 && t != nd.Int64 {
		return nil, fmt.Errorf("indices are %v, want int32 or int64", t)
	}
	out := append(append(append([]int{}, data[:axis]...), idx...), data[axis+1:]...)
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k *gather) Run(in, out []nd.Array) error {
	data := in[0]
	axis, _ := NormAxis(int(k.axis), len(data.Shape))
	idx, err := nd.Int64s(in[1])
	if err != nil {
		return err
	}
	n := data.Shape[axis]
	for i, v := range idx {
		if v < -int64(n) || v >= int64(n) {
			return fmt.Errorf("index %d (element %d of indices) is out of range for axis %d of size %d", v, i, axis, n)
		}
		if v < 0 {
			idx[i] = v + int64(n)
		}
	}
	size := data.Type.Size()
	block := numel(data.Shape[axis+1:]) * size
	outer := numel(data.Shape[:axis])
	src, dst := data.Data, out[0].Data
	parallel.For(outer*len(idx), block, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			o, j := t/len(idx), t%len(idx)
			s := (o*n + int(idx[j])) * block
			copy(dst[t*block:(t+1)*block], src[s:s+block])
		}
	})
	return nil
}
