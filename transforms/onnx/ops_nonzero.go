package onnx

import (
	"fmt"
	"math"

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
func countNonZero(a nd.Array) int { return len(nonZeroIndices(a, nil)) }

// nonZeroIndices appends the flat indices of a's non-zero elements to dst,
// in order: float32 and the one-byte types (bool, a mask) in loops of
// their own, the rest a byte at a time.
func nonZeroIndices(a nd.Array, dst []int) []int {
	switch {
	case a.Type == nd.Float32:
		for i, v := range nd.MustAs[float32](a) {
			if math.Float32bits(v)&0x7fffffff != 0 { // -0.0 is zero, NaN is not
				dst = append(dst, i)
			}
		}
	case a.Type.Size() == 1:
		for i, v := range a.Data {
			if v != 0 {
				dst = append(dst, i)
			}
		}
	default:
		size := a.Type.Size()
		for i := 0; i < len(a.Data); i += size {
			if nonZeroAt(a, i) {
				dst = append(dst, i/size)
			}
		}
	}
	return dst
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
	idx := nonZeroIndices(in[0], nil)
	if len(idx) != out[0].Shape[1] {
		return fmt.Errorf("NonZero found %d non-zero elements, planned for %d", len(idx), out[0].Shape[1])
	}
	fillCoords(nd.MustAs[int64](out[0]), idx, in[0].Shape)
	return nil
}

// fillCoords writes the coordinates of flat indices idx in an array of
// shape, one column each: ys[d*len(idx)+j] is axis d of idx[j].
func fillCoords(ys []int64, idx, shape []int) {
	n := len(idx)
	for j, f := range idx {
		for d := len(shape) - 1; d >= 0; d-- {
			ys[d*n+j] = int64(f % shape[d])
			f /= shape[d]
		}
	}
}

// RunShaped counts x's non-zero elements, makes the output for them and
// fills it (Run).
func (k nonZeroKernel) RunShaped(in []nd.Array, alloc func(nd.DType, []int) (nd.Array, error)) ([]nd.Array, error) {
	idx := nonZeroIndices(in[0], nil)
	out, err := alloc(nd.Int64, []int{len(in[0].Shape), len(idx)})
	if err != nil {
		return nil, err
	}
	fillCoords(nd.MustAs[int64](out), idx, in[0].Shape)
	return []nd.Array{out}, nil
}
