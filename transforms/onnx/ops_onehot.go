package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// OneHot (opsets 9, 11): indices of any number type, a scalar depth (any
// number type, known before the model runs: it is the new axis's length)
// and values = [off, on]; the output has values' type and the indices'
// shape with an axis of depth inserted at axis (default -1, the last). A
// negative index counts from depth (from 11; ONNX 9 leaves it undefined,
// and this runtime counts it the same); an index outside [-depth, depth)
// gives a row of off values, as ONNX specifies. Float indices are
// truncated toward zero.

func init() {
	RegisterOp(OpDef{Name: "OneHot", Versions: []int{9, 11}, New: newOneHot})
}

type oneHotKernel struct{ axis int }

func newOneHot(n *Node) (Kernel, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	return &oneHotKernel{axis: int(a.Int("axis", -1))}, a.Err()
}

// plan gives the output's shape, the depth and outer x depth x inner.
func (k *oneHotKernel) plan(in []Meta) (shape []int, depth, outer, inner int, err error) {
	x := in[0].Shape
	if len(in[2].Shape) != 1 || in[2].Shape[0] != 2 {
		return nil, 0, 0, 0, fmt.Errorf("input values has shape %s: OneHot takes [off, on]", nd.ShapeString(in[2].Shape))
	}
	if !isNumeric(in[0].Type) || !isNumeric(in[1].Type) {
		return nil, 0, 0, 0, fmt.Errorf("inputs indices and depth are %v and %v: OneHot takes numbers", in[0].Type, in[1].Type)
	}
	if in[1].Value == nil {
		return nil, 0, 0, 0, NeedValue(1)
	}
	dv, err := nd.Convert(*in[1].Value, nd.Float64)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	ds := nd.MustAs[float64](dv)
	if len(ds) != 1 || !(ds[0] >= 1) || ds[0] > math.MaxInt32 {
		return nil, 0, 0, 0, fmt.Errorf("input depth is %v: OneHot takes one number of at least 1", ds)
	}
	depth = int(ds[0])
	ax := k.axis
	if ax < 0 {
		ax += len(x) + 1
	}
	if ax < 0 || ax > len(x) {
		return nil, 0, 0, 0, fmt.Errorf("attribute axis is %d: OneHot of a rank-%d input takes -%d to %d", k.axis, len(x), len(x)+1, len(x))
	}
	shape = append(append(append(make([]int, 0, len(x)+1), x[:ax]...), depth), x[ax:]...)
	if _, err := nd.Numel(shape); err != nil {
		return nil, 0, 0, 0, fmt.Errorf("the output of shape %s: %w", nd.ShapeString(shape), err)
	}
	return shape, depth, numel(x[:ax]), numel(x[ax:]), nil
}

func (k *oneHotKernel) Infer(in []Meta) ([]Meta, error) {
	shape, _, _, _, err := k.plan(in)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: in[2].Type, Shape: shape}}, nil
}

func (k *oneHotKernel) Run(in, out []nd.Array) error {
	_, depth, outer, inner, err := k.plan(ValueMetas(in))
	if err != nil {
		return err
	}
	idx, err := nd.Convert(in[0], nd.Int64) // float indices truncated
	if err != nil {
		return err
	}
	ix := nd.MustAs[int64](idx)
	size := in[2].Type.Size()
	off, on := in[2].Data[:size], in[2].Data[size:2*size]
	y := out[0].Data
	parallel.For(outer, depth*inner, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			blk := y[o*depth*inner*size : (o+1)*depth*inner*size]
			for i := 0; i < depth*inner; i++ {
				copy(blk[i*size:], off)
			}
			for c, v := range ix[o*inner : (o+1)*inner] {
				if v < 0 {
					v += int64(depth)
				}
				if v >= 0 && v < int64(depth) {
					copy(blk[(int(v)*inner+c)*size:], on)
				}
			}
		}
	})
	return nil
}
