package onnx

import (
	"errors"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The views: operators whose output is their input's data under another
// shape, which the runtime makes without a copy (Viewer).
//
//	Reshape    1 (shape attribute), 5, 13 (shape input), 14 (allowzero)
//	Flatten    1, 9, 11 (negative axis), 13
//	Squeeze    1, 11 (axes attribute, negative from 11), 13 (axes input)
//	Unsqueeze  1, 11 (axes attribute, negative from 11), 13 (axes input)

func init() {
	RegisterOp(OpDef{Name: "Reshape", Versions: []int{1, 5, 13, 14}, New: newReshape})
	RegisterOp(OpDef{Name: "Flatten", Versions: []int{1, 9, 11, 13}, New: newFlatten})
	RegisterOp(OpDef{Name: "Squeeze", Versions: []int{1, 11, 13}, New: newSqueeze})
	RegisterOp(OpDef{Name: "Unsqueeze", Versions: []int{1, 11, 13}, New: newUnsqueeze})
}

// view is what the views share: output 0 is input 0's data, and Run has
// nothing to do.
type view struct{}

func (view) Run(in, out []nd.Array) error { return nil }
func (view) View(out int) (int, bool)     { return 0, out == 0 }

type reshape struct {
	view
	shape     []int64 // opset 1's attribute; nil: the shape input
	allowZero bool
}

func newReshape(n *Node) (Kernel, error) {
	a := n.Attrs
	k := &reshape{}
	if n.Since < 5 {
		a.Ignore("consumed_inputs")
		s, ok := a.Ints("shape")
		if !ok {
			return nil, errors.New("attribute shape is required")
		}
		k.shape = s
		return k, n.CheckArity(1, 1, 1, 1)
	}
	if n.Since >= 14 {
		k.allowZero = a.Flag("allowzero", false)
	}
	return k, n.CheckArity(2, 2, 1, 1)
}

func (k *reshape) Infer(in []Meta) ([]Meta, error) {
	dims := k.shape
	if dims == nil {
		var err error
		if dims, err = KnownInts(in, 1, "shape"); err != nil {
			return nil, err
		}
		if len(in[1].Shape) != 1 {
			return nil, fmt.Errorf("shape has shape %s, want one dimension", nd.ShapeString(in[1].Shape))
		}
	}
	out, err := reshapeDims(in[0].Shape, dims, k.allowZero)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

// reshapeDims is Reshape's output shape: a 0 in dims copies the input's
// dimension (unless allowZero), one -1 takes what is left.
func reshapeDims(in []int, dims []int64, allowZero bool) ([]int, error) {
	total := numel(in)
	out := make([]int, len(dims))
	unknown, known, zero := -1, 1, false
	for i, d := range dims {
		switch {
		case d == -1:
			if unknown >= 0 {
				return nil, fmt.Errorf("shape %v has more than one -1", dims)
			}
			unknown = i
			continue
		case d == 0 && !allowZero:
			if i >= len(in) {
				return nil, fmt.Errorf("shape %v copies dimension %d (a 0) from input of shape %s, which has rank %d", dims, i, nd.ShapeString(in), len(in))
			}
			out[i] = in[i]
		case d < 0 || d > nd.MaxElements:
			return nil, fmt.Errorf("shape %v: dimension %d is %d", dims, i, d)
		default:
			out[i] = int(d)
		}
		zero = zero || out[i] == 0
		if out[i] != 0 && known > nd.MaxElements/out[i] {
			return nil, fmt.Errorf("shape %v: %w", dims, nd.ErrTooLarge)
		}
		known *= out[i]
	}
	if allowZero && unknown >= 0 && zero {
		return nil, fmt.Errorf("shape %v holds both 0 and -1, which allowzero=1 forbids", dims)
	}
	if unknown >= 0 {
		if known == 0 || total%known != 0 {
			return nil, fmt.Errorf("input of shape %s (%d elements) cannot be reshaped to %v", nd.ShapeString(in), total, dims)
		}
		out[unknown] = total / known
	} else if known != total {
		return nil, fmt.Errorf("input of shape %s (%d elements) cannot be reshaped to %s (%d elements)", nd.ShapeString(in), total, nd.ShapeString(out), known)
	}
	return out, nil
}

type flatten struct {
	view
	axis     int
	negative bool // negative axes allowed (opset 11)
}

func newFlatten(n *Node) (Kernel, error) {
	k := &flatten{axis: int(n.Attrs.Int("axis", 1)), negative: n.Since >= 11}
	return k, n.CheckArity(1, 1, 1, 1)
}

func (k *flatten) Infer(in []Meta) ([]Meta, error) {
	r, axis := len(in[0].Shape), k.axis
	if axis < 0 && k.negative {
		axis += r
	}
	if axis < 0 || axis > r {
		lo := 0
		if k.negative {
			lo = -r
		}
		return nil, fmt.Errorf("axis %d is out of range [%d, %d] for rank %d", k.axis, lo, r, r)
	}
	sh := in[0].Shape
	return []Meta{{Type: in[0].Type, Shape: []int{numel(sh[:axis]), numel(sh[axis:])}}}, nil
}

type squeeze struct {
	view
	axes     []int64 // the attribute (opsets 1, 11)
	hasAxes  bool
	axesFrom int // the axes input (13), or -1
}

func newSqueeze(n *Node) (Kernel, error) {
	k := &squeeze{axesFrom: -1}
	if n.Since < 13 {
		k.axes, k.hasAxes = n.Attrs.Ints("axes")
		return k, n.CheckArity(1, 1, 1, 1)
	}
	if n.HasInput(1) {
		k.axesFrom, k.hasAxes = 1, true
	}
	return k, n.CheckArity(1, 2, 1, 1)
}

func (k *squeeze) Infer(in []Meta) ([]Meta, error) {
	axes := k.axes
	if k.axesFrom >= 0 {
		var err error
		if axes, err = KnownInts(in, k.axesFrom, "axes"); err != nil {
			return nil, err
		}
	}
	sh := in[0].Shape
	drop := make([]bool, len(sh))
	if !k.hasAxes || len(axes) == 0 { // every dimension of 1 (as ONNX Runtime does for empty axes)
		for i, d := range sh {
			drop[i] = d == 1
		}
	} else {
		norm, err := NormAxes(axes, len(sh))
		if err != nil {
			return nil, err
		}
		for _, a := range norm {
			if sh[a] != 1 {
				return nil, fmt.Errorf("axis %d of shape %s has size %d: only dimensions of 1 can be squeezed", a, nd.ShapeString(sh), sh[a])
			}
			drop[a] = true
		}
	}
	out := []int{}
	for i, d := range sh {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

type unsqueeze struct {
	view
	axes     []int64 // the attribute (opsets 1, 11); nil: the input
	fromAxes bool
}

func newUnsqueeze(n *Node) (Kernel, error) {
	if n.Since < 13 {
		axes, ok := n.Attrs.Ints("axes")
		if !ok {
			return nil, errors.New("attribute axes is required")
		}
		return &unsqueeze{axes: axes}, n.CheckArity(1, 1, 1, 1)
	}
	return &unsqueeze{fromAxes: true}, n.CheckArity(2, 2, 1, 1)
}

func (k *unsqueeze) Infer(in []Meta) ([]Meta, error) {
	axes := k.axes
	if k.fromAxes {
		var err error
		if axes, err = KnownInts(in, 1, "axes"); err != nil {
			return nil, err
		}
	}
	sh := in[0].Shape
	r := len(sh) + len(axes)
	norm, err := NormAxes(axes, r)
	if err != nil {
		return nil, err
	}
	inserted := make([]bool, r)
	for _, a := range norm {
		inserted[a] = true
	}
	out := make([]int, 0, r)
	j := 0
	for i := range r {
		if inserted[i] {
			out = append(out, 1)
		} else {
			out = append(out, sh[j])
			j++
		}
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}
