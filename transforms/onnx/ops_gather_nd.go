package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// GatherND (opsets 11, 12 batch_dims, 13) and ScatterND (11, 13, 16
// reduction add and mul, 18 max and min): indexing by tuples. The last
// axis of indices (int64) holds tuples of m indices into data's axes after
// the batch_dims leading ones (which data and indices share); each tuple
// names a slice of data, gathered into the output (of shape indices' but
// the last axis, then the slice's) or overwritten (reduced) by the slice of
// updates in ScatterND, in order. Indices are counted from the end when
// negative; one out of range is an error naming it. On the device both are
// one kernel (ops_gather_nd.cu), ScatterND with a reduction on the host.

func init() {
	RegisterOp(OpDef{Name: "GatherND", Versions: []int{11, 12, 13}, New: newND(false)})
	RegisterOp(OpDef{Name: "ScatterND", Versions: []int{11, 13, 16, 18}, New: newND(true)})
}

type ndKernel struct {
	scatter bool
	batch   int
	red     scatterRed
}

func newND(scatter bool) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		k := &ndKernel{scatter: scatter}
		var err error
		if scatter {
			k.red = readReduction(n)
			err = n.CheckArity(3, 3, 1, 1)
		} else {
			if n.Since >= 12 {
				k.batch = int(n.Attrs.Int("batch_dims", 0))
			}
			err = n.CheckArity(2, 2, 1, 1)
		}
		if err != nil {
			return nil, err
		}
		return k, n.Attrs.Err()
	}
}

func (k *ndKernel) name() string {
	if k.scatter {
		return "ScatterND"
	}
	return "GatherND"
}

// ndPlan is the shape of the indexing: batches of tuples of m indices, each
// naming a slice of inner elements; dims are the m indexed axes of data.
type ndPlan struct {
	batches, tuples, m, inner int
	dims                      []int
	out                       []int // GatherND's output shape
}

func (k *ndKernel) plan(in []Meta) (ndPlan, error) {
	data, idx := in[0].Shape, in[1].Shape
	b := k.batch
	if in[1].Type != nd.Int64 {
		return ndPlan{}, fmt.Errorf("input indices is %v: %s takes int64", in[1].Type, k.name())
	}
	if len(idx) < 1 || len(data) < 1 || b < 0 || b >= min(len(idx), len(data)) {
		return ndPlan{}, fmt.Errorf("inputs data and indices have shapes %s and %s: %s with batch_dims %d takes ranks above it",
			nd.ShapeString(data), nd.ShapeString(idx), k.name(), b)
	}
	m := idx[len(idx)-1]
	if m < 1 || b+m > len(data) {
		return ndPlan{}, fmt.Errorf("input indices has shape %s: tuples of %d indices into data of shape %s with batch_dims %d",
			nd.ShapeString(idx), m, nd.ShapeString(data), b)
	}
	for i := range b {
		if idx[i] != data[i] {
			return ndPlan{}, fmt.Errorf("inputs data and indices have shapes %s and %s: their first %d (batch_dims) axes differ", nd.ShapeString(data), nd.ShapeString(idx), b)
		}
	}
	p := ndPlan{batches: numel(data[:b]), tuples: numel(idx[b : len(idx)-1]), m: m, inner: numel(data[b+m:]), dims: data[b : b+m]}
	p.out = append(append([]int{}, idx[:len(idx)-1]...), data[b+m:]...)
	return p, nil
}

func (k *ndKernel) Infer(in []Meta) ([]Meta, error) {
	p, err := k.plan(in)
	if err != nil {
		return nil, err
	}
	if !k.scatter {
		return []Meta{{Type: in[0].Type, Shape: p.out}}, nil
	}
	if !equalShape(in[2].Shape, p.out) || in[2].Type != in[0].Type {
		return nil, fmt.Errorf("input updates is %v%s: ScatterND takes shape %s and data's type %v", in[2].Type, nd.ShapeString(in[2].Shape), nd.ShapeString(p.out), in[0].Type)
	}
	if k.red != scatterNone && !isNumeric(in[0].Type) {
		return nil, fmt.Errorf("ScatterND's reduction of %v: takes a number type", in[0].Type)
	}
	return []Meta{{Type: in[0].Type, Shape: in[0].Shape}}, nil
}

// offsets gives the data element at which each tuple's slice starts.
func (p ndPlan) offsets(indices nd.Array) ([]int64, error) {
	v := nd.MustAs[int64](indices)
	offs := make([]int64, p.batches*p.tuples)
	st := Strides(p.dims)
	perBatch := numel(p.dims) * p.inner
	for t := range offs {
		off := (t / max(p.tuples, 1)) * perBatch
		for j, x := range v[t*p.m : (t+1)*p.m] {
			n := int64(p.dims[j])
			if x < -n || x >= n {
				return nil, fmt.Errorf("index %d (element %d of indices) is out of range for an axis of size %d", x, t*p.m+j, n)
			}
			if x < 0 {
				x += n
			}
			off += int(x) * st[j] * p.inner
		}
		offs[t] = int64(off)
	}
	return offs, nil
}

func (k *ndKernel) Run(in, out []nd.Array) error {
	p, err := k.plan(ValueMetas(in))
	if err != nil {
		return err
	}
	offs, err := p.offsets(in[1])
	if err != nil {
		return err
	}
	if k.scatter {
		copy(out[0].Data, in[0].Data)
		return scatterAt(k.red, out[0], in[2], offs, p.inner)
	}
	b := p.inner * in[0].Type.Size()
	src, dst := in[0].Data, out[0].Data
	parallel.For(len(offs), b, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			o := int(offs[t]) * b / p.inner
			copy(dst[t*b:(t+1)*b], src[o:o+b])
		}
	})
	return nil
}
