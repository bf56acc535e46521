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
func countNonZero(a nd.Array) int { return nonZeroWords(a, nil, 0) }

// fillNonZero writes the coordinates of a's n non-zero elements to ys
// ([rank, n]: ys[d*n+j] is axis d of the j-th).
func fillNonZero(a nd.Array, ys []int64, n int) { nonZeroWords(a, ys, n) }

// nonZeroWords views a's elements as words of their size: with ys nil it
// counts the non-zero ones, else it fills ys with their n coordinates.
func nonZeroWords(a nd.Array, ys []int64, n int) int {
	switch a.Type.Size() {
	case 1:
		return nonZeroOf(words[uint8](a.Data), nzMask[uint8](a.Type), a.Shape, ys, n)
	case 2:
		return nonZeroOf(words[uint16](a.Data), nzMask[uint16](a.Type), a.Shape, ys, n)
	case 4:
		return nonZeroOf(words[uint32](a.Data), nzMask[uint32](a.Type), a.Shape, ys, n)
	default:
		return nonZeroOf(words[uint64](a.Data), nzMask[uint64](a.Type), a.Shape, ys, n)
	}
}

func nonZeroOf[W word](w []W, mask W, shape []int, ys []int64, n int) int {
	if ys == nil {
		return countNZ(w, mask)
	}
	fillNZ(w, mask, shape, ys, n)
	return n
}

// nzMask is the bits of an element of type t that make it non-zero: all
// but a float's sign bit (-0.0 is zero, NaN is not), all of an integer's
// or a bool's.
func nzMask[W word](t nd.DType) W {
	if t.IsFloat() {
		return ^W(0) >> 1
	}
	return ^W(0)
}

// countNZ counts the elements of w with a bit of mask set, without a
// branch on the values (which are a coin toss to the predictor).
func countNZ[W word](w []W, mask W) int {
	n := 0
	for _, v := range w {
		n += int(b2u(v&mask != 0))
	}
	return n
}

// fillNZ writes the coordinates of the n elements of w (of shape) with a
// bit of mask set, a row of the last axis at a time: the row's positions
// gathered without a branch, the other axes' coordinates (the row's)
// filled in runs; no division.
func fillNZ[W word](w []W, mask W, shape []int, ys []int64, n int) {
	rank := len(shape)
	if rank == 0 || len(w) == 0 {
		return
	}
	row := shape[rank-1]
	cols := make([]int64, row+1)
	coord := make([]int64, rank-1)
	at := 0
	for r0 := 0; r0 < len(w); r0 += row {
		c := 0
		for j, v := range w[r0 : r0+row] {
			cols[c] = int64(j)
			c += int(b2u(v&mask != 0))
		}
		if c > 0 {
			for d, x := range coord {
				run := ys[d*n+at : d*n+at+c]
				for i := range run {
					run[i] = x
				}
			}
			copy(ys[(rank-1)*n+at:], cols[:c])
			at += c
		}
		for d := rank - 2; d >= 0; d-- { // the next row's coordinates
			if coord[d]++; coord[d] < int64(shape[d]) {
				break
			}
			coord[d] = 0
		}
	}
}

func (nonZeroKernel) Run(in, out []nd.Array) error {
	n := countNonZero(in[0])
	if n != out[0].Shape[1] {
		return fmt.Errorf("NonZero found %d non-zero elements, planned for %d", n, out[0].Shape[1])
	}
	fillNonZero(in[0], nd.MustAs[int64](out[0]), n)
	return nil
}

// RunShaped counts x's non-zero elements, makes the output for them and
// fills it.
func (k nonZeroKernel) RunShaped(in []nd.Array, alloc func(nd.DType, []int) (nd.Array, error)) ([]nd.Array, error) {
	n := countNonZero(in[0])
	out, err := alloc(nd.Int64, []int{len(in[0].Shape), n})
	if err != nil {
		return nil, err
	}
	fillNonZero(in[0], nd.MustAs[int64](out), n)
	return []nd.Array{out}, nil
}
