package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Trilu (opset 14): the upper (upper=1, the default) or lower triangle of
// each matrix of the last two axes, the rest zero. The optional int64
// scalar input k moves the diagonal: element (i, j) is kept when j-i >= k
// (upper) or j-i <= k (lower). Every element type; on the device a kernel
// that moves elements of any size (k downloaded when the device computed
// it).

func init() {
	RegisterOp(OpDef{Name: "Trilu", Versions: []int{14}, New: newTrilu})
}

type triluKernel struct{ upper bool }

func newTrilu(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	k := &triluKernel{upper: a.Flag("upper", true)}
	return k, a.Err()
}

func (k *triluKernel) Infer(in []Meta) ([]Meta, error) {
	if len(in[0].Shape) < 2 {
		return nil, fmt.Errorf("input has shape %s: Trilu takes a rank of at least 2", nd.ShapeString(in[0].Shape))
	}
	if m := metaAt(in, 1); m.Type != nd.Undefined && (m.Type != nd.Int64 || numel(m.Shape) != 1 || len(m.Shape) > 1) {
		return nil, fmt.Errorf("input k is %v of shape %s: Trilu takes an int64 scalar", m.Type, nd.ShapeString(m.Shape))
	}
	return []Meta{{Type: in[0].Type, Shape: in[0].Shape}}, nil
}

// diag is the value of k, v (0 when left out: nil).
func (k *triluKernel) diag(v []int64) (int, error) {
	if v == nil {
		return 0, nil
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("input k: Trilu takes one int64")
	}
	// Clamped: past the matrix's size every k keeps all or nothing.
	return int(max(min(v[0], 1<<40), -1<<40)), nil
}

func (k *triluKernel) Run(in, out []nd.Array) error {
	var kv []int64
	if len(in) > 1 && in[1].Type != nd.Undefined {
		var err error
		if kv, err = nd.Int64s(in[1]); err != nil {
			return err
		}
	}
	d, err := k.diag(kv)
	if err != nil {
		return err
	}
	x := in[0]
	rows, cols := x.Shape[len(x.Shape)-2], x.Shape[len(x.Shape)-1]
	size := x.Type.Size()
	src, dst := x.Data, out[0].Data
	if rows*cols == 0 {
		return nil
	}
	mats := x.Len() / (rows * cols)
	parallel.For(mats*rows, cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			i := r % rows
			// The kept columns are [a, b).
			a, b := 0, cols
			if k.upper {
				a = min(max(i+d, 0), cols)
			} else {
				b = min(max(i+d+1, 0), cols)
			}
			row := dst[r*cols*size : (r+1)*cols*size]
			if a >= b {
				clear(row)
				continue
			}
			clear(row[:a*size])
			copy(row[a*size:b*size], src[(r*cols+a)*size:(r*cols+b)*size])
			clear(row[b*size:])
		}
	})
	return nil
}
