package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// NonZero (opsets 9, 13): the int64 coordinates of x's non-zero elements,
// one column each in row-major order ([rank, count]). Its output's shape
// depends on x's contents, and the runtime plans shapes before a run: x
// must be known before the model runs (a constant, or a graph input, whose
// contents then key the plan, so that NonZero is computed while planning).
// NonZero of a value the model computes is refused when the plan is made,
// naming the node ("data-dependent shapes are not supported").

func init() {
	RegisterOp(OpDef{Name: "NonZero", Versions: []int{9, 13}, New: newNonZero})
}

type nonZeroKernel struct{}

func newNonZero(n *Node) (Kernel, error) { return nonZeroKernel{}, n.CheckArity(1, 1, 1, 1) }

func (nonZeroKernel) Infer(in []Meta) ([]Meta, error) {
	if !isNumeric(in[0].Type) && in[0].Type != nd.Bool {
		return nil, fmt.Errorf("NonZero of %v: takes a number or bool type", in[0].Type)
	}
	if in[0].Value == nil {
		return nil, NeedValue(0)
	}
	return []Meta{{Type: nd.Int64, Shape: []int{len(in[0].Shape), countNonZero(*in[0].Value)}}}, nil
}

// countNonZero counts the elements of a with a bit set (every type's zero,
// -0.0 aside, is all zero bits).
func countNonZero(a nd.Array) int {
	size, n := a.Type.Size(), 0
	for i := 0; i < len(a.Data); i += size {
		if nonZeroAt(a, i) {
			n++
		}
	}
	return n
}

func nonZeroAt(a nd.Array, i int) bool {
	size := a.Type.Size()
	for _, b := range a.Data[i : i+size] {
		if b != 0 {
			// -0.0 is zero: only its sign bit set.
			if a.Type.IsFloat() && isNegZero(a.Data[i:i+size]) {
				return false
			}
			return true
		}
	}
	return false
}

func isNegZero(b []byte) bool {
	for _, v := range b[:len(b)-1] {
		if v != 0 {
			return false
		}
	}
	return b[len(b)-1] == 0x80
}

func (nonZeroKernel) Run(in, out []nd.Array) error {
	x := in[0]
	rank, count := len(x.Shape), out[0].Shape[1]
	ys := nd.MustAs[int64](out[0])
	coord := make([]int, rank)
	size, j := x.Type.Size(), 0
	for i := 0; i < len(x.Data); i += size {
		if nonZeroAt(x, i) {
			for d, c := range coord {
				ys[d*count+j] = int64(c)
			}
			j++
		}
		for d := rank - 1; d >= 0; d-- {
			if coord[d]++; coord[d] < x.Shape[d] {
				break
			}
			coord[d] = 0
		}
	}
	return nil
}
