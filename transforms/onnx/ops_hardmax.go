package onnx

import (
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Hardmax (opsets 1, 11, 13): 1 where a value is the first maximum of its
// softmax row, 0 elsewhere. The rows are Softmax's (ops_softmax.go): before
// 13 the input coerced to 2-D at axis (default 1), from 13 the values along
// axis (default -1). NaN is no maximum unless a row is all NaN (then the
// first). On the device hardmax_f32 (ops_hardmax.cu), one thread a row.

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
