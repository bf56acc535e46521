package onnx

import (
	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Hardmax (opsets 1, 11, 13): 1 where a value is the first maximum of its
// softmax row, 0 elsewhere. The rows are Softmax's (ops_softmax.go): before
// 13 the input coerced to 2-D at axis (default 1), from 13 the values along
// axis (default -1). NaN is no maximum unless a row is all NaN (then the
// first). Rows along the last axis of float32s find their maximum on
// minMaxVec's vector kernel, on all cores. On the device hardmax_f32
// (ops_hardmax.cu), one thread a row.

func init() {
	RegisterOp(OpDef{Name: "Hardmax", Versions: []int{1, 11, 13}, New: newHardmax})
}

// hardmax holds Softmax's rows (a field, not embedded: Softmax's Launch is
// not Hardmax's).
type hardmax struct{ rows *softmaxKernel }

func newHardmax(n *Node) (Kernel, error) {
	k, err := newSoftmax(false)(n)
	if err != nil {
		return nil, err
	}
	return &hardmax{k.(*softmaxKernel)}, nil
}

func (k *hardmax) Infer(in []Meta) ([]Meta, error) { return k.rows.Infer(in) }

func (k *hardmax) Run(in, out []nd.Array) error {
	outer, n, inner, err := k.rows.split(in[0].Shape)
	if err != nil {
		return err
	}
	f, err := floating[hardmaxLoop]("Hardmax", in[0].Type)
	if err != nil {
		return err
	}
	f.hardmax(in[0], out[0], outer, n, inner)
	return nil
}

type hardmaxLoop interface {
	hardmax(x, y nd.Array, outer, n, inner int)
}

func (floats[T]) hardmax(x, y nd.Array, outer, n, inner int) {
	xs, ys := nd.MustAs[T](x), nd.MustAs[T](y)
	if x32, ok := any(xs).([]float32); ok && inner == 1 && n > 0 {
		parallel.ForWith(outer, n, hardmaxArgs{x32, any(ys).([]float32), n}, hardmaxRows)
		return
	}
	clear(ys)
	for o := range outer {
		for i := range inner {
			base := o*n*inner + i
			best := -1
			for j := range n {
				v := xs[base+j*inner]
				if v != v {
					continue
				}
				if best < 0 || v > xs[base+best*inner] {
					best = j
				}
			}
			if n > 0 {
				ys[base+max(best, 0)*inner] = 1
			}
		}
	}
}

// hardmaxArgs are hardmaxRows' data: rows of n float32s.
type hardmaxArgs struct {
	x, y []float32
	n    int
}

// hardmaxRows writes Hardmax's rows lo to hi along the contiguous last
// axis.
func hardmaxRows(a *hardmaxArgs, lo, hi int) {
	n := a.n
	for r := lo; r < hi; r++ {
		out := a.y[r*n : (r+1)*n]
		clear(out)
		out[firstMax32(a.x[r*n:(r+1)*n])] = 1
	}
}

// firstMax32 is the index of row's first maximum, NaN skipped (0 when all
// are NaN), as the plain loop finds it: the maximum of the whole vectors on
// minMaxVec's kernel (a row with NaN there goes to the plain loop), the
// rest's in Go, then the first index holding it (±0 are equal, as in the
// plain loop).
func firstMax32(row []float32) int {
	_, best, m, nan := minMaxVec(row)
	if m == 0 || nan {
		first := -1
		for j, v := range row {
			if v == v && (first < 0 || v > row[first]) {
				first = j
			}
		}
		return max(first, 0)
	}
	for _, v := range row[m:] {
		if v > best { // false for NaN
			best = v
		}
	}
	for j, v := range row {
		if v == best {
			return j
		}
	}
	return 0 // not reached: best is one of the row's values
}
