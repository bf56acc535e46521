package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The operators of shape arithmetic and inference-time no-ops:
//
//	Shape            1, 13, 15 (start, end)
//	ConstantOfShape  9
//	Range            11
//	Dropout          1, 6, 7, 10, 12, 13 (inference only: output 0 a view of
//	                 the input, the mask all true)
//
// Shape's value is known while planning (the shapes are), so the planner
// computes what depends on it (Gather, Concat, Unsqueeze ... of small int64
// tensors) before the run.

func init() {
	RegisterOp(OpDef{Name: "Shape", Versions: []int{1, 13, 15}, New: newShape})
	RegisterOp(OpDef{Name: "ConstantOfShape", Versions: []int{9}, New: newConstantOfShape})
	RegisterOp(OpDef{Name: "Range", Versions: []int{11}, New: newRange})
	RegisterOp(OpDef{Name: "Dropout", Versions: []int{1, 6, 7, 10, 12, 13}, New: newDropout})
}

type shapeOp struct{ start, end int64 }

func newShape(n *Node) (Kernel, error) {
	k := &shapeOp{start: 0, end: math.MaxInt64}
	if n.Since >= 15 {
		k.start = n.Attrs.Int("start", 0)
		k.end = n.Attrs.Int("end", math.MaxInt64)
	}
	return k, n.CheckArity(1, 1, 1, 1)
}

// dims is the part of shape that Shape returns: start and end clamped to
// [0, rank] after negative ones are counted from the end.
func (k *shapeOp) dims(shape []int) []int64 {
	r := int64(len(shape))
	clamp := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return max(0, min(v, r))
	}
	s, e := clamp(k.start), clamp(k.end)
	out := []int64{}
	for i := s; i < e; i++ {
		out = append(out, int64(shape[i]))
	}
	return out
}

func (k *shapeOp) Infer(in []Meta) ([]Meta, error) {
	d := k.dims(in[0].Shape)
	v := nd.Of(d, len(d))
	return []Meta{{Type: nd.Int64, Shape: []int{len(d)}, Value: &v}}, nil
}

func (k *shapeOp) Run(in, out []nd.Array) error {
	copy(nd.MustAs[int64](out[0]), k.dims(in[0].Shape))
	return nil
}

type constantOfShape struct{ value nd.Array }

func newConstantOfShape(n *Node) (Kernel, error) {
	k := &constantOfShape{value: nd.Scalar(float32(0))}
	if v, ok := n.Attrs.Tensor("value"); ok {
		if v.Len() != 1 {
			return nil, fmt.Errorf("attribute value has %d elements, want 1", v.Len())
		}
		k.value = v
	}
	return k, n.CheckArity(1, 1, 1, 1)
}

func (k *constantOfShape) Infer(in []Meta) ([]Meta, error) {
	shape, err := knownShape(in, 0)
	if err != nil {
		return nil, err
	}
	if _, err := nd.Numel(shape); err != nil {
		return nil, fmt.Errorf("shape %s: %w", nd.ShapeString(shape), err)
	}
	return []Meta{{Type: k.value.Type, Shape: shape}}, nil
}

func (k *constantOfShape) Run(in, out []nd.Array) error {
	fillParallel(out[0].Data, k.value.Data)
	return nil
}

type rangeOp struct{}

func newRange(n *Node) (Kernel, error) { return rangeOp{}, n.CheckArity(3, 3, 1, 1) }

// rangeCount is Range's element count: ceil((limit-start)/delta), at
// least 0.
func rangeCount(start, limit, delta float64) (int, error) {
	if delta == 0 {
		return 0, errors.New("delta is 0")
	}
	n := math.Ceil((limit - start) / delta)
	switch {
	case math.IsNaN(n):
		return 0, fmt.Errorf("start %g, limit %g and delta %g make no range", start, limit, delta)
	case n <= 0:
		return 0, nil
	case n > float64(nd.MaxElements):
		return 0, fmt.Errorf("start %g, limit %g and delta %g: %w", start, limit, delta, nd.ErrTooLarge)
	}
	return int(n), nil
}

func (rangeOp) Infer(in []Meta) ([]Meta, error) {
	for i, name := range []string{"start", "limit", "delta"} {
		if in[i].Value == nil {
			return nil, NeedValue(i)
		}
		if in[i].Type != in[0].Type {
			return nil, fmt.Errorf("%s is %v, start %v: want one type", name, in[i].Type, in[0].Type)
		}
		if numel(in[i].Shape) != 1 {
			return nil, fmt.Errorf("%s has shape %s, want a scalar", name, nd.ShapeString(in[i].Shape))
		}
	}
	v := func(i int) float64 { return nd.Float64s(*in[i].Value)[0] }
	n, err := rangeCount(v(0), v(1), v(2))
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: in[0].Type, Shape: []int{n}}}, nil
}

// rangeTypes are the types Range is defined for.
var rangeTypes = []nd.DType{nd.Float32, nd.Float64, nd.Int16, nd.Int32, nd.Int64}

func (rangeOp) Run(in, out []nd.Array) error {
	if !slices.Contains(rangeTypes, in[0].Type) {
		return notSupported("Range", in[0].Type)
	}
	f, err := numeric[rangeLoop]("Range", in[0].Type)
	if err != nil {
		return err
	}
	return f.rangeInto(in, out[0])
}

type rangeLoop interface {
	rangeInto(in []nd.Array, out nd.Array) error
}

func (numbers[T, W]) rangeInto(in []nd.Array, out nd.Array) error { return rangeInto[T](in, out) }

// rangeInto writes start + i·delta, computed in T as ONNX's reference does.
func rangeInto[T numElem](in []nd.Array, out nd.Array) error {
	start, delta := nd.MustAs[T](in[0])[0], nd.MustAs[T](in[2])[0]
	o := nd.MustAs[T](out)
	v := start
	for i := range o {
		o[i] = v
		v += delta
	}
	return nil
}

type dropout struct {
	trainFrom int // the training_mode input (opset 12), or -1
	train     bool
	maskT     bool // the mask has the input's type (before opset 10)
}

func newDropout(n *Node) (Kernel, error) {
	a := n.Attrs
	k := &dropout{trainFrom: -1, maskT: n.Since < 10}
	switch {
	case n.Since < 7:
		a.Ignore("consumed_inputs", "ratio")
		k.train = a.Int("is_test", 0) == 0
	case n.Since < 12:
		a.Ignore("ratio")
	default:
		a.Ignore("seed")
		if n.HasInput(2) {
			k.trainFrom = 2
		}
	}
	if n.Since >= 12 {
		return k, n.CheckArity(1, 3, 1, 2)
	}
	if k.train {
		return nil, errors.New("is_test=0 (training) is not supported: the runtime infers")
	}
	return k, n.CheckArity(1, 1, 1, 2)
}

func (k *dropout) View(out int) (int, bool) { return 0, out == 0 }

func (k *dropout) Infer(in []Meta) ([]Meta, error) {
	if k.trainFrom >= 0 {
		t, err := KnownInts(in, k.trainFrom, "training_mode")
		if err != nil {
			if _, ok := isNeedValue(err); ok || in[k.trainFrom].Type != nd.Bool {
				return nil, err
			}
			t = []int64{int64(in[k.trainFrom].Value.Data[0])}
		}
		if len(t) > 0 && t[0] != 0 && len(in) > 1 && in[1].Type != nd.Undefined && in[1].Value == nil {
			return nil, NeedValue(1) // training with a ratio of 0 is the identity too
		}
		if len(t) > 0 && t[0] != 0 && !zeroRatio(in) {
			return nil, errors.New("training_mode is true with a ratio other than 0: random dropout is not supported, the runtime infers")
		}
	}
	mask := nd.Bool
	if k.maskT {
		mask = in[0].Type
	}
	return []Meta{{Type: in[0].Type, Shape: in[0].Shape}, {Type: mask, Shape: in[0].Shape}}, nil
}

func (k *dropout) Run(in, out []nd.Array) error {
	if len(out) > 1 && out[1].Type != nd.Undefined {
		one, err := nd.Convert(nd.Scalar(true), out[1].Type)
		if err != nil {
			return err
		}
		fillParallel(out[1].Data, one.Data)
	}
	return nil
}

// zeroRatio reports whether Dropout's ratio input is known to be 0, which
// makes training mode the identity too.
func zeroRatio(in []Meta) bool {
	if len(in) < 2 || in[1].Value == nil {
		return false
	}
	r := nd.Float64s(*in[1].Value)
	return len(r) == 1 && r[0] == 0
}
