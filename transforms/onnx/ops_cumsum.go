package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// CumSum (opsets 11, 14): the running sums of x along axis, an int32 or
// int64 scalar input (negative counted from the end), known before the
// run on the device (the CPU reads it at the run). exclusive leaves the
// current element out of its sum (the first sum is 0); reverse sums from
// the end. Floats accumulate in float64, signed integers in int64 and
// unsigned ones in uint64 (wrapping), each sum rounded to the type.

func init() {
	RegisterOp(OpDef{Name: "CumSum", Versions: []int{11, 14}, New: newCumSum})
}

type cumSumKernel struct {
	exclusive, reverse bool
}

func newCumSum(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	k := &cumSumKernel{exclusive: a.Flag("exclusive", false), reverse: a.Flag("reverse", false)}
	return k, a.Err()
}

func (k *cumSumKernel) Infer(in []Meta) ([]Meta, error) {
	if !isNumeric(in[0].Type) {
		return nil, fmt.Errorf("CumSum of %v: takes a number type", in[0].Type)
	}
	if t := in[1].Type; (t != nd.Int32 && t != nd.Int64) || len(in[1].Shape) > 1 || numel(in[1].Shape) != 1 {
		return nil, fmt.Errorf("input axis is %v of shape %s: CumSum takes an int32 or int64 scalar", t, nd.ShapeString(in[1].Shape))
	}
	return []Meta{{Type: in[0].Type, Shape: in[0].Shape}}, nil
}

// split views x as outer x n x inner along the axis v (the value of input 1).
func (k *cumSumKernel) split(x []int, v []int64) (outer, n, inner int, err error) {
	if len(v) != 1 {
		return 0, 0, 0, fmt.Errorf("input axis: CumSum takes one integer")
	}
	if len(x) == 0 {
		return 0, 0, 0, fmt.Errorf("input x is a scalar: CumSum takes an array")
	}
	ax, err := NormAxis(int(v[0]), len(x))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("input axis: %w", err)
	}
	return numel(x[:ax]), x[ax], numel(x[ax+1:]), nil
}

func (k *cumSumKernel) Run(in, out []nd.Array) error {
	axis, err := nd.Int64s(in[1])
	if err != nil {
		return err
	}
	outer, n, inner, err := k.split(in[0].Shape, axis)
	if err != nil {
		return err
	}
	f, err := numeric[cumSumLoop]("CumSum", in[0].Type)
	if err != nil {
		return err
	}
	f.cumSum(in[0], out[0], outer, n, inner, k.exclusive, k.reverse)
	return nil
}

type cumSumLoop interface {
	cumSum(x, y nd.Array, outer, n, inner int, exclusive, reverse bool)
}

func (numbers[T, W]) cumSum(x, y nd.Array, outer, n, inner int, exclusive, reverse bool) {
	xs, ys := nd.MustAs[T](x), nd.MustAs[T](y)
	parallel.For(outer, n*inner, func(lo, hi int) {
		acc := make([]W, inner)
		for o := lo; o < hi; o++ {
			clear(acc)
			base := o * n * inner
			for s := range n {
				j := s
				if reverse {
					j = n - 1 - s
				}
				r := base + j*inner
				xr, yr := xs[r:r+inner], ys[r:r+inner]
				if exclusive {
					for i, v := range xr {
						yr[i] = T(acc[i])
						acc[i] += W(v)
					}
					continue
				}
				for i, v := range xr {
					acc[i] += W(v)
					yr[i] = T(acc[i])
				}
			}
		}
	})
}
