package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// ConcatFromSequence, SequenceAt and SequenceLength read a sequence that a
// Loop builds (sequence.go) or that SplitToSequence makes, which the
// runtime holds as its elements stacked on a new first axis: an array [n,
// element shape...], the n elements of one shape. ConcatFromSequence joins
// them along axis (a new axis where new_axis is 1: torch.stack; an
// existing one where it is 0: torch.cat), SequenceAt takes element
// position (negative from the end), SequenceLength is n. SplitToSequence
// cuts its input along axis into chunks of one size (split a scalar, or a
// list of equal sizes, or left out: chunks of 1), which keepdims 0 drops
// where split is not a list, as ONNX Runtime does (torch.unbind writes a
// split of 1 with keepdims 0); chunks of different sizes (a split that
// does not divide the axis) are refused, naming the node. The runtime
// makes no other sequence, so these operators see no other.
//
// SequenceEmpty, SequenceConstruct, SequenceInsert and SequenceErase make
// sequences so held: an empty one is an array of shape [0] (its elements'
// shape is the first one inserted's), the elements constructed or
// inserted must be of the sequence's type and shape (a sequence whose
// elements differ in shape is refused, naming the node), a position is
// negative from the end. A sequence a Loop carries and changes each
// iteration changes shape each iteration: the Loop's outputs depend on the
// data, and its body is planned once per length (the loader's rewrite,
// sequence.go, takes the common case, a list appended to, out of that).
// On the GPU executor these operators run on the host.

func init() {
	RegisterOp(OpDef{Name: "ConcatFromSequence", Versions: []int{11}, New: newConcatFromSequence})
	RegisterOp(OpDef{Name: "SequenceAt", Versions: []int{11}, New: newSequenceAt})
	RegisterOp(OpDef{Name: "SequenceLength", Versions: []int{11}, New: newSequenceLength})
	RegisterOp(OpDef{Name: "SplitToSequence", Versions: []int{11}, New: newSplitToSequence})
	RegisterOp(OpDef{Name: "SequenceEmpty", Versions: []int{11}, New: newSequenceEmpty})
	RegisterOp(OpDef{Name: "SequenceConstruct", Versions: []int{11}, New: newSequenceConstruct})
	RegisterOp(OpDef{Name: "SequenceInsert", Versions: []int{11}, New: newSequenceInsert})
	RegisterOp(OpDef{Name: "SequenceErase", Versions: []int{11}, New: newSequenceErase})
}

type concatFromSequence struct {
	axis    int
	newAxis bool
}

func newConcatFromSequence(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if !n.Attrs.Has("axis") {
		return nil, fmt.Errorf("attribute axis is required")
	}
	return &concatFromSequence{axis: int(n.Attrs.Int("axis", 0)), newAxis: n.Attrs.Flag("new_axis", false)}, nil
}

// layout returns the output's shape and the axis at which the elements
// are stacked in it (before a join with the existing axis).
func (k *concatFromSequence) layout(stacked []int) (out []int, at int, err error) {
	if len(stacked) == 0 {
		return nil, 0, fmt.Errorf("the sequence is a scalar")
	}
	n, elem := stacked[0], stacked[1:]
	if k.newAxis {
		if at, err = NormAxis(k.axis, len(elem)+1); err != nil {
			return nil, 0, err
		}
		return insertAxis(elem, at, n), at, nil
	}
	if at, err = NormAxis(k.axis, len(elem)); err != nil {
		return nil, 0, err
	}
	out = append([]int{}, elem...)
	out[at] *= n
	return out, at, nil
}

func (k *concatFromSequence) Infer(in []Meta) ([]Meta, error) {
	out, _, err := k.layout(in[0].Shape)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k *concatFromSequence) Run(in, out []nd.Array) error {
	s := in[0]
	_, at, err := k.layout(s.Shape)
	if err != nil {
		return err
	}
	// stacked at axis at: [elem[:at]..., n, elem[at:]...], the same data
	// as the join along elem's axis at
	stackedShape := insertAxis(s.Shape[1:], at, s.Shape[0])
	o := nd.Array{Type: out[0].Type, Shape: stackedShape, Data: out[0].Data}
	for i := range s.Shape[0] {
		put(o, at, i, take(s, 0, i))
	}
	return nil
}

type sequenceAt struct{}

func newSequenceAt(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return sequenceAt{}, nil
}

func (sequenceAt) Infer(in []Meta) ([]Meta, error) {
	s, p := in[0], in[1]
	if len(s.Shape) == 0 {
		return nil, fmt.Errorf("the sequence is a scalar")
	}
	if (p.Type != nd.Int32 && p.Type != nd.Int64) || numel(p.Shape) != 1 {
		return nil, fmt.Errorf("position is %v, want an int32 or int64 of one element", p)
	}
	return []Meta{{Type: s.Type, Shape: s.Shape[1:]}}, nil
}

func (sequenceAt) Run(in, out []nd.Array) error {
	s := in[0]
	p, err := nd.Int64s(in[1])
	if err != nil {
		return err
	}
	n := int64(s.Shape[0])
	i := p[0]
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return fmt.Errorf("position %d is outside the sequence of %d elements", p[0], n)
	}
	copy(out[0].Data, take(s, 0, int(i)).Data)
	return nil
}

type sequenceLength struct{}

func newSequenceLength(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return sequenceLength{}, nil
}

func (sequenceLength) Infer(in []Meta) ([]Meta, error) {
	if len(in[0].Shape) == 0 {
		return nil, fmt.Errorf("the sequence is a scalar")
	}
	v := nd.Scalar(int64(in[0].Shape[0]))
	return []Meta{{Type: nd.Int64, Shape: []int{}, Value: &v}}, nil
}

func (sequenceLength) Run(in, out []nd.Array) error {
	nd.MustAs[int64](out[0])[0] = int64(in[0].Shape[0])
	return nil
}

type splitToSequence struct {
	axis     int
	keepdims bool
}

func newSplitToSequence(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	return &splitToSequence{axis: int(n.Attrs.Int("axis", 0)), keepdims: n.Attrs.Flag("keepdims", true)}, nil
}

// chunks returns the axis, the chunks' size along it and their number, and
// whether the axis is dropped from each.
func (k *splitToSequence) chunks(x []int, split Meta) (ax, size, count int, drop bool, err error) {
	if ax, err = NormAxis(k.axis, len(x)); err != nil {
		return 0, 0, 0, false, err
	}
	l := x[ax]
	size, drop = 1, !k.keepdims
	if split.Type != nd.Undefined {
		sv, ok := split.Known()
		if !ok {
			return 0, 0, 0, false, NeedValue(1)
		}
		if len(split.Shape) > 0 { // a list: keepdims does not apply
			if len(sv) == 0 {
				return 0, 0, 0, false, fmt.Errorf("split is empty")
			}
			var sum int64
			for _, v := range sv {
				if v != sv[0] {
					return 0, 0, 0, false, fmt.Errorf("split %v cuts chunks of different sizes: the runtime holds a sequence of one shape", sv)
				}
				sum += v
			}
			if sv[0] < 0 || sum != int64(l) {
				return 0, 0, 0, false, fmt.Errorf("split %v for an axis of %d", sv, l)
			}
			return ax, int(sv[0]), len(sv), false, nil
		}
		if sv[0] < 1 {
			return 0, 0, 0, false, fmt.Errorf("split %d, want 1 or more", sv[0])
		}
		size = int(sv[0])
	}
	if l%size != 0 {
		return 0, 0, 0, false, fmt.Errorf("split %d does not divide the axis of %d: its last chunk would be smaller, and the runtime holds a sequence of one shape", size, l)
	}
	if drop && size != 1 {
		return 0, 0, 0, false, fmt.Errorf("keepdims 0 with chunks of %d", size)
	}
	return ax, size, l / size, drop, nil
}

func (k *splitToSequence) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	ax, size, count, drop, err := k.chunks(x.Shape, metaAt(in, 1))
	if err != nil {
		return nil, err
	}
	elem := append([]int{}, x.Shape...)
	elem[ax] = size
	if drop {
		elem = dropAxis(elem, ax)
	}
	return []Meta{{Type: x.Type, Shape: append([]int{count}, elem...)}}, nil
}

func (k *splitToSequence) Run(in, out []nd.Array) error {
	x := in[0]
	split := Meta{}
	if len(in) > 1 && in[1].Type != nd.Undefined {
		split = Meta{Type: in[1].Type, Shape: in[1].Shape, Value: &in[1]}
	}
	ax, size, count, _, err := k.chunks(x.Shape, split)
	if err != nil {
		return err
	}
	outer, inner := numel(x.Shape[:ax]), numel(x.Shape[ax+1:])*x.Type.Size()
	l := x.Shape[ax]
	chunk := size * inner
	o := out[0].Data
	for i := range count {
		for j := range outer {
			copy(o[(i*outer+j)*chunk:(i*outer+j+1)*chunk], x.Data[(j*l+i*size)*inner:])
		}
	}
	return nil
}

type sequenceEmpty struct{ t nd.DType }

func newSequenceEmpty(n *Node) (Kernel, error) {
	if err := n.CheckArity(0, 0, 1, 1); err != nil {
		return nil, err
	}
	t := nd.DType(n.Attrs.Int("dtype", int64(nd.Float32)))
	if !t.Supported() {
		return nil, fmt.Errorf("attribute dtype is %d: not a supported element type", t)
	}
	return sequenceEmpty{internal(t)}, nil
}

func (k sequenceEmpty) Infer([]Meta) ([]Meta, error) {
	v := nd.Zeros(k.t, 0)
	return []Meta{{Type: k.t, Shape: []int{0}, Value: &v}}, nil
}

func (k sequenceEmpty) Run(_, _ []nd.Array) error { return nil }

type sequenceConstruct struct{}

func newSequenceConstruct(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 1<<30, 1, 1); err != nil {
		return nil, err
	}
	return sequenceConstruct{}, nil
}

func (sequenceConstruct) Infer(in []Meta) ([]Meta, error) {
	for i, m := range in[1:] {
		if m.Type != in[0].Type || !nd.SameShape(m.Shape, in[0].Shape) {
			return nil, fmt.Errorf("input %d is %v, input 0 %v: the runtime holds a sequence of one type and shape", i+1, m, in[0])
		}
	}
	return []Meta{{Type: in[0].Type, Shape: append([]int{len(in)}, in[0].Shape...)}}, nil
}

func (sequenceConstruct) Run(in, out []nd.Array) error {
	stack(out[0], in)
	return nil
}

// position reads a sequence position (int32 or int64, one element), or
// def where it is left out; negative counts from the end; it must be in
// [0, n] (insert: end true) or [0, n).
func position(p nd.Array, def, n int64, end bool) (int64, error) {
	if p.Type == nd.Undefined {
		return def, nil
	}
	v, err := nd.Int64s(p)
	if err != nil || len(v) != 1 {
		return 0, fmt.Errorf("position is %v%s, want an int32 or int64 of one element", p.Type, nd.ShapeString(p.Shape))
	}
	i := v[0]
	if i < 0 {
		i += n
	}
	hi := n - 1
	if end {
		hi = n
	}
	if i < 0 || i > hi {
		return 0, fmt.Errorf("position %d is outside the sequence of %d elements", v[0], n)
	}
	return i, nil
}

type sequenceInsert struct{}

func newSequenceInsert(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	return sequenceInsert{}, nil
}

func (sequenceInsert) Infer(in []Meta) ([]Meta, error) {
	s, t := in[0], in[1]
	if len(s.Shape) == 0 {
		return nil, fmt.Errorf("the sequence is a scalar")
	}
	if s.Type != t.Type {
		return nil, fmt.Errorf("the tensor is %v, the sequence's elements %v", t.Type, s.Type)
	}
	if s.Shape[0] == 0 { // empty: its elements take the tensor's shape
		return []Meta{{Type: t.Type, Shape: append([]int{1}, t.Shape...)}}, nil
	}
	if !nd.SameShape(s.Shape[1:], t.Shape) {
		return nil, fmt.Errorf("the tensor is %v, the sequence's elements are %s: the runtime holds a sequence of one shape", t, nd.ShapeString(s.Shape[1:]))
	}
	return []Meta{{Type: t.Type, Shape: append([]int{s.Shape[0] + 1}, t.Shape...)}}, nil
}

func (sequenceInsert) Run(in, out []nd.Array) error {
	s, t := in[0], in[1]
	n := int64(s.Shape[0])
	at, err := position(arrayAt(in, 2), n, n, true)
	if err != nil {
		return err
	}
	elem := len(t.Data)
	o := out[0].Data
	copy(o, s.Data[:int(at)*elem])
	copy(o[int(at)*elem:], t.Data)
	copy(o[int(at+1)*elem:], s.Data[int(at)*elem:])
	return nil
}

type sequenceErase struct{}

func newSequenceErase(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	return sequenceErase{}, nil
}

func (sequenceErase) Infer(in []Meta) ([]Meta, error) {
	s := in[0]
	if len(s.Shape) == 0 || s.Shape[0] == 0 {
		return nil, fmt.Errorf("the sequence is empty: nothing to erase")
	}
	return []Meta{{Type: s.Type, Shape: append([]int{s.Shape[0] - 1}, s.Shape[1:]...)}}, nil
}

func (sequenceErase) Run(in, out []nd.Array) error {
	s := in[0]
	n := int64(s.Shape[0])
	at, err := position(arrayAt(in, 1), n-1, n, false)
	if err != nil {
		return err
	}
	elem := len(s.Data) / int(n)
	o := out[0].Data
	copy(o, s.Data[:int(at)*elem])
	copy(o[int(at)*elem:], s.Data[int(at+1)*elem:])
	return nil
}
