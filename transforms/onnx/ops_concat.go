package onnx

import (
	"errors"
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Concat (opsets 1, 4, 11 negative axis, 13) and Split (1, 2, 11, 13 split
// as an input, 18 num_outputs): blocks copied along one axis.

func init() {
	RegisterOp(OpDef{Name: "Concat", Versions: []int{1, 4, 11, 13}, New: newConcat})
	RegisterOp(OpDef{Name: "Split", Versions: []int{1, 2, 11, 13, 18}, New: newSplit})
}

type concat struct{ axis int64 }

func newConcat(n *Node) (Kernel, error) {
	k := &concat{axis: 1}
	if n.Since >= 4 {
		if !n.Attrs.Has("axis") {
			return nil, errors.New("attribute axis is required")
		}
		k.axis = n.Attrs.Int("axis", 0)
	} else {
		k.axis = n.Attrs.Int("axis", 1)
	}
	return k, n.CheckArity(1, 1<<20, 1, 1)
}

func (k *concat) Infer(in []Meta) ([]Meta, error) {
	first := in[0].Shape
	axis, err := NormAxis(int(k.axis), len(first))
	if err != nil {
		return nil, err
	}
	out := append([]int{}, first...)
	out[axis] = 0
	for i, m := range in {
		if m.Type != in[0].Type {
			return nil, fmt.Errorf("input %d is %v, input 0 %v", i, m.Type, in[0].Type)
		}
		if len(m.Shape) != len(first) {
			return nil, fmt.Errorf("input %d has rank %d, input 0 rank %d", i, len(m.Shape), len(first))
		}
		for d := range first {
			if d != axis && m.Shape[d] != first[d] {
				return nil, fmt.Errorf("shapes %s and %s differ in dimension %d, not only in axis %d",
					nd.ShapeString(first), nd.ShapeString(m.Shape), d, axis)
			}
		}
		out[axis] += m.Shape[axis]
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k *concat) Run(in, out []nd.Array) error {
	axis, _ := NormAxis(int(k.axis), len(out[0].Shape))
	moveAlong(out[0], nil, in, axis, true)
	return nil
}

// moveAlong copies between whole (out of concat, in of split) and parts
// laid side by side along axis, of shapes's shapes (parts nil: shapes's
// data): into whole when gather, else out of it.
func moveAlong(whole nd.Array, parts [][]byte, shapes []nd.Array, axis int, gather bool) {
	size := whole.Type.Size()
	outer := numel(whole.Shape[:axis])
	inner := numel(whole.Shape[axis+1:]) * size
	m := moveRun{whole: whole.Data, row: whole.Shape[axis] * inner, gather: gather}
	for i := range shapes {
		m.part = shapes[i].Data
		if parts != nil {
			m.part = parts[i]
		}
		m.blk = shapes[i].Shape[axis] * inner
		parallel.ForWith(outer, m.blk, m, (*moveRun).rows)
		m.off += m.blk
	}
}

// moveRun is one part's copy of moveAlong: blk bytes a row, at off in
// whole's rows of row bytes.
type moveRun struct {
	whole, part   []byte
	row, off, blk int
	gather        bool
}

// rows copies rows lo..hi.
func (m *moveRun) rows(lo, hi int) {
	for r := lo; r < hi; r++ {
		w := m.whole[r*m.row+m.off : r*m.row+m.off+m.blk]
		if m.gather {
			copy(w, m.part[r*m.blk:(r+1)*m.blk])
		} else {
			copy(m.part[r*m.blk:(r+1)*m.blk], w)
		}
	}
}

type split struct {
	axis       int64
	split      []int64 // the attribute (before 13)
	fromInput  bool
	numOutputs int64 // opset 18
	nOut       int
}

func newSplit(n *Node) (Kernel, error) {
	a := n.Attrs
	k := &split{axis: a.Int("axis", 0), nOut: len(n.Outputs)}
	switch {
	case n.Since < 13:
		k.split, _ = a.Ints("split")
		if n.Since == 1 && n.HasInput(1) {
			k.fromInput = true
		}
	default:
		k.fromInput = n.HasInput(1)
		if n.Since >= 18 {
			k.numOutputs = a.Int("num_outputs", 0)
			if k.numOutputs != 0 && k.fromInput {
				return nil, errors.New("both the split input and attribute num_outputs are given")
			}
			if !k.fromInput && k.numOutputs != int64(len(n.Outputs)) {
				return nil, fmt.Errorf("attribute num_outputs is %d, the node has %d outputs", k.numOutputs, len(n.Outputs))
			}
		}
	}
	return k, n.CheckArity(1, 2, 1, 1<<20)
}

func (k *split) Infer(in []Meta) ([]Meta, error) {
	sh := in[0].Shape
	axis, err := NormAxis(int(k.axis), len(sh))
	if err != nil {
		return nil, err
	}
	sizes := k.split
	if k.fromInput {
		if sizes, err = KnownInts(in, 1, "split"); err != nil {
			return nil, err
		}
	}
	nOut := k.nOut
	d := int64(sh[axis])
	switch {
	case len(sizes) > 0:
		if len(sizes) != nOut {
			return nil, fmt.Errorf("split %v has %d parts, the node %d outputs", sizes, len(sizes), nOut)
		}
		var sum int64
		for _, s := range sizes {
			if s < 0 {
				return nil, fmt.Errorf("split %v has a negative part", sizes)
			}
			if s > d { // and the sum cannot wrap around
				return nil, fmt.Errorf("split %v has a part of %d, axis %d has %d", sizes, s, axis, d)
			}
			sum += s
		}
		if sum != d {
			return nil, fmt.Errorf("split %v sums to %d, axis %d has %d", sizes, sum, axis, d)
		}
	case k.numOutputs > 0: // opset 18: the last part the smaller one
		per := (d + k.numOutputs - 1) / k.numOutputs
		sizes = make([]int64, nOut)
		for i := range sizes {
			sizes[i] = max(0, min(per, d-int64(i)*per))
		}
	default:
		if d%int64(nOut) != 0 {
			return nil, fmt.Errorf("axis %d of size %d does not split into %d equal parts", axis, d, nOut)
		}
		sizes = make([]int64, nOut)
		for i := range sizes {
			sizes[i] = d / int64(nOut)
		}
	}
	out := make([]Meta, nOut)
	for i, s := range sizes {
		o := append([]int{}, sh...)
		o[axis] = int(s)
		out[i] = Meta{Type: in[0].Type, Shape: o}
	}
	return out, nil
}

func (k *split) Run(in, out []nd.Array) error {
	axis, _ := NormAxis(int(k.axis), len(in[0].Shape))
	metas, err := k.Infer(ValueMetas(in)) // the parts' shapes, left-out outputs' too
	if err != nil {
		return err
	}
	parts := make([][]byte, len(out))
	shapes := make([]nd.Array, len(out))
	for i := range out {
		parts[i], shapes[i] = out[i].Data, out[i]
		if out[i].Type == nd.Undefined { // a left-out output: its part is skipped into scratch
			shapes[i] = nd.Array{Shape: metas[i].Shape}
			parts[i] = make([]byte, numel(metas[i].Shape)*in[0].Type.Size())
		}
	}
	moveAlong(in[0], parts, shapes, axis, false)
	return nil
}
