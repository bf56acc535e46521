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
	n := data.Shape[axis]
	var err error
	switch in[1].Type { // Infer took int32 or int64 only
	case nd.Int32:
		err = checkIndices(nd.MustAs[int32](in[1]), n, axis)
	default:
		err = checkIndices(nd.MustAs[int64](in[1]), n, axis)
	}
	if err != nil {
		return err
	}
	size := data.Type.Size()
	r := gatherRun{src: data.Data, dst: out[0].Data, idx: in[1], n: n, block: numel(data.Shape[axis+1:]) * size}
	tasks := numel(data.Shape[:axis]) * in[1].Len()
	if in[1].Type == nd.Int32 { // the instantiations made here, outside generic code: no closure
		parallel.ForWith(tasks, r.block, r, gatherRange[int32])
	} else {
		parallel.ForWith(tasks, r.block, r, gatherRange[int64])
	}
	return nil
}

// checkIndices checks Gather's indices against the axis's size n (-n to
// n-1).
func checkIndices[I int32 | int64](idx []I, n, axis int) error {
	for i, v := range idx {
		if int64(v) < -int64(n) || int64(v) >= int64(n) {
			return fmt.Errorf("index %d (element %d of indices) is out of range for axis %d of size %d", v, i, axis, n)
		}
	}
	return nil
}

// gatherRun is a run of Gather: blocks of block bytes of src, n along the
// axis, copied to dst in the order of the indices.
type gatherRun struct {
	src, dst []byte
	idx      nd.Array
	n, block int
}

// gatherRange copies the blocks lo..hi of the output (an index of the
// axes before the gathered one, times the indices), a negative index
// counting from the axis's end.
func gatherRange[I int32 | int64](r *gatherRun, lo, hi int) {
	idx, block := nd.MustAs[I](r.idx), r.block
	for t := lo; t < hi; t++ {
		o, j := t/len(idx), t%len(idx)
		v := int(idx[j])
		if v < 0 {
			v += r.n
		}
		s := (o*r.n + v) * block
		copy(r.dst[t*block:(t+1)*block], r.src[s:s+block])
	}
}
