package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// NonZero (opsets 9, 13): the int64 coordinates of x's non-zero elements,
// one column each in row-major order ([rank, count]). Its output's shape
// depends on x's contents: where x is known before the run NonZero is
// computed while planning; else it is DataShaped (op.go), the plan ends at
// it and the rest of the model is planned for the count it found.

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
		return nil, ShapeFromData()
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

// RunShaped counts x's non-zero elements, makes the output for them and
// fills it (Run).
func (k nonZeroKernel) RunShaped(in []nd.Array, alloc func(nd.DType, []int) (nd.Array, error)) ([]nd.Array, error) {
	out, err := alloc(nd.Int64, []int{len(in[0].Shape), countNonZero(in[0])})
	if err != nil {
		return nil, err
	}
	return []nd.Array{out}, k.Run(in, []nd.Array{out})
}
