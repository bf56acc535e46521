package onnx

import (
	"errors"
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Slice (opset 1 with attributes; 10, 11, 13 with inputs and steps),
// Expand (8, 13) and Pad (2 attributes; 11, 13 inputs;
// 18 axes; modes constant, reflect, edge): strided copies (strided.go).

func init() {
	RegisterOp(OpDef{Name: "Slice", Versions: []int{1, 10, 11, 13}, New: newSlice})
	RegisterOp(OpDef{Name: "Expand", Versions: []int{8, 13}, New: newExpand})
	RegisterOp(OpDef{Name: "Pad", Versions: []int{2, 11, 13, 18}, New: newPad})
}

type slice struct {
	starts, ends, axes []int64 // opset 1's attributes
	inputs             bool
	plans              stridedPlans // the run's copy, kept
}

func newSlice(n *Node) (Kernel, error) {
	if n.Since >= 10 {
		return &slice{inputs: true}, n.CheckArity(3, 5, 1, 1)
	}
	a := n.Attrs
	k := &slice{}
	var ok1, ok2 bool
	k.starts, ok1 = a.Ints("starts")
	k.ends, ok2 = a.Ints("ends")
	k.axes, _ = a.Ints("axes")
	if !ok1 || !ok2 {
		return nil, errors.New("attributes starts and ends are required")
	}
	return k, n.CheckArity(1, 1, 1, 1)
}

// window is a Slice's copy: per axis of the input, the first index, the
// step and the count.
func (k *slice) window(in []Meta) (first, step, count []int, err error) {
	sh := in[0].Shape
	starts, ends, axes := k.starts, k.ends, k.axes
	var steps []int64
	if k.inputs {
		if starts, err = KnownInts(in, 1, "starts"); err != nil {
			return
		}
		if ends, err = KnownInts(in, 2, "ends"); err != nil {
			return
		}
		if len(in) > 3 && in[3].Type != nd.Undefined {
			if axes, err = KnownInts(in, 3, "axes"); err != nil {
				return
			}
		}
		if len(in) > 4 && in[4].Type != nd.Undefined {
			if steps, err = KnownInts(in, 4, "steps"); err != nil {
				return
			}
		}
	}
	if len(starts) != len(ends) || (axes != nil && len(axes) != len(starts)) || (steps != nil && len(steps) != len(starts)) {
		return nil, nil, nil, fmt.Errorf("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
	}
	first, step, count = make([]int, len(sh)), make([]int, len(sh)), append([]int{}, sh...)
	for i := range step {
		step[i] = 1
	}
	seen := make([]bool, len(sh))
	for i := range starts {
		a := int64(i)
		if axes != nil {
			a = axes[i]
		}
		ax, e := NormAxis(int(a), len(sh))
		if e != nil {
			return nil, nil, nil, e
		}
		if seen[ax] {
			return nil, nil, nil, fmt.Errorf("axis %d is sliced twice", ax)
		}
		seen[ax] = true
		st := int64(1)
		if steps != nil {
			st = steps[i]
		}
		if st == 0 {
			return nil, nil, nil, fmt.Errorf("step of axis %d is 0", ax)
		}
		first[ax], count[ax] = sliceAxis(starts[i], ends[i], st, int64(sh[ax]))
		step[ax] = int(st)
	}
	return first, step, count, nil
}

// sliceAxis clamps start and end as ONNX says and returns the first index
// and the count along an axis of size d.
func sliceAxis(s, e, step, d int64) (int, int) {
	adj := func(v int64) int64 {
		if v < 0 {
			if v < math.MinInt64+d {
				return math.MinInt64 / 2
			}
			return v + d
		}
		return v
	}
	s, e = adj(s), adj(e)
	if step > 0 {
		s, e = max(0, min(s, d)), max(0, min(e, d))
		if e <= s {
			return int(s), 0
		}
		return int(s), int((e - s + step - 1) / step)
	}
	s, e = max(-1, min(s, d-1)), max(-1, min(e, d-1))
	if s <= e {
		return 0, 0
	}
	return int(s), int((s - e + (-step) - 1) / (-step))
}

func (k *slice) Infer(in []Meta) ([]Meta, error) {
	_, _, count, err := k.window(in)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: in[0].Type, Shape: count}}, nil
}

func (k *slice) Run(in, out []nd.Array) error {
	c, ok, err := k.plans.get(in, func() (strided, error) { return k.copyPlan(ValueMetas(in)) })
	if ok {
		runStrided(out[0].Data, in[0].Data, in[0].Type.Size(), c)
	}
	return err
}

// copyPlan is the strided copy of the slice's window out of the data; the
// CPU and the device run it.
func (k *slice) copyPlan(in []Meta) (strided, error) {
	first, step, count, err := k.window(in)
	if err != nil {
		return strided{}, err
	}
	st := Strides(in[0].Shape)
	c := strided{shape: count, dstSt: Strides(count), srcSt: make([]int, len(st))}
	for i := range st {
		c.srcSt[i] = st[i] * step[i]
		c.srcOff += first[i] * st[i]
	}
	return c, nil
}

type expand struct{}

func newExpand(n *Node) (Kernel, error) { return expand{}, n.CheckArity(2, 2, 1, 1) }

func (expand) Infer(in []Meta) ([]Meta, error) {
	shape, err := knownShape(in, 1)
	if err != nil {
		return nil, err
	}
	out, err := BroadcastShapes(in[0].Shape, shape)
	if err != nil {
		return nil, err
	}
	if _, err := nd.Numel(out); err != nil {
		return nil, err
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (expand) Run(in, out []nd.Array) error {
	o := out[0].Shape
	copyStrided(out[0].Data, in[0].Data, in[0].Type.Size(),
		strided{shape: o, dstSt: Strides(o), srcSt: BroadcastStrides(in[0].Shape, o)})
	return nil
}

type pad struct {
	mode   string
	pads   []int64 // opset 2's attribute
	value  float32 // opset 2's attribute
	inputs bool
}

func newPad(n *Node) (Kernel, error) {
	a := n.Attrs
	k := &pad{mode: a.String("mode", "constant")}
	a.OneOf("mode", k.mode, "constant", "reflect", "edge")
	if n.Since < 11 {
		var ok bool
		if k.pads, ok = a.Ints("pads"); !ok {
			return nil, errors.New("attribute pads is required")
		}
		k.value = a.Float("value", 0)
		return k, n.CheckArity(1, 1, 1, 1)
	}
	k.inputs = true
	if n.Since >= 18 {
		return k, n.CheckArity(2, 4, 1, 1)
	}
	return k, n.CheckArity(2, 3, 1, 1)
}

// amounts returns the pads before and after each axis.
func (k *pad) amounts(in []Meta) (before, after []int, err error) {
	r := len(in[0].Shape)
	pads := k.pads
	var axes []int
	if k.inputs {
		if pads, err = KnownInts(in, 1, "pads"); err != nil {
			return nil, nil, err
		}
		if len(in) > 3 && in[3].Type != nd.Undefined {
			ax, e := KnownInts(in, 3, "axes")
			if e != nil {
				return nil, nil, e
			}
			if axes, err = NormAxes(ax, r); err != nil {
				return nil, nil, err
			}
		}
	}
	if axes == nil {
		axes = make([]int, r)
		for i := range axes {
			axes[i] = i
		}
	}
	if len(pads) != 2*len(axes) {
		return nil, nil, fmt.Errorf("pads %v has %d values, want %d (2 for each of %d axes)", pads, len(pads), 2*len(axes), len(axes))
	}
	for _, p := range pads {
		if p < -nd.MaxElements || p > nd.MaxElements { // their sums must not wrap
			return nil, nil, fmt.Errorf("pads %v: %d is more than an axis may hold (%d)", pads, p, int64(nd.MaxElements))
		}
	}
	before, after = make([]int, r), make([]int, r)
	for i, a := range axes {
		before[a], after[a] = int(pads[i]), int(pads[i+len(axes)])
		d := in[0].Shape[a]
		if d+before[a]+after[a] < 0 {
			return nil, nil, fmt.Errorf("pads %v remove more than axis %d's %d elements", pads, a, d)
		}
		if k.mode != "constant" && d == 0 && before[a]+after[a] > 0 {
			return nil, nil, fmt.Errorf("%s padding of axis %d, which is empty", k.mode, a)
		}
	}
	return before, after, nil
}

func (k *pad) Infer(in []Meta) ([]Meta, error) {
	before, after, err := k.amounts(in)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(before))
	for i, d := range in[0].Shape {
		out[i] = d + before[i] + after[i]
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k *pad) Run(in, out []nd.Array) error {
	before, _, err := k.amounts(ValueMetas(in))
	if err != nil {
		return err
	}
	src, dst := in[0], out[0]
	size := src.Type.Size()
	if k.mode == "constant" {
		fill := nd.Scalar(k.value)
		if k.inputs && len(in) > 2 && in[2].Type != nd.Undefined {
			fill = in[2]
		}
		v, err := nd.Convert(fill, src.Type)
		if err != nil {
			return err
		}
		fillParallel(dst.Data, v.Data[:size])
		// The interior: the input's part that lands in the output.
		c := strided{shape: make([]int, len(before)), dstSt: Strides(dst.Shape), srcSt: Strides(src.Shape)}
		for i := range before {
			lo := max(0, -before[i])                        // input index of the first copied element
			hi := min(src.Shape[i], dst.Shape[i]-before[i]) // one past the last
			c.shape[i] = max(0, hi-lo)
			c.srcOff += lo * c.srcSt[i]
			c.dstOff += (lo + before[i]) * c.dstSt[i]
		}
		copyStrided(dst.Data, src.Data, size, c)
		return nil
	}
	// reflect and edge: each output index maps to an input index per axis.
	maps := make([][]int, len(before))
	for a := range maps {
		d := src.Shape[a]
		m := make([]int, dst.Shape[a])
		for o := range m {
			m[o] = padIndex(o-before[a], d, k.mode)
		}
		maps[a] = m
	}
	sst := Strides(src.Shape)
	n := numel(dst.Shape)
	r := len(dst.Shape)
	parallel.For(n, r, func(lo, hi int) {
		idx := make([]int, r)
		for o := lo; o < hi; o++ {
			rem, s := o, 0
			for a := r - 1; a >= 0; a-- {
				idx[a] = rem % dst.Shape[a]
				rem /= dst.Shape[a]
				s += maps[a][idx[a]] * sst[a]
			}
			copy(dst.Data[o*size:(o+1)*size], src.Data[s*size:(s+1)*size])
		}
	})
	return nil
}

// padIndex is the input index that i (possibly outside [0, d)) reads in
// reflect or edge mode.
func padIndex(i, d int, mode string) int {
	if mode == "edge" || d == 1 {
		return max(0, min(i, d-1))
	}
	period := 2 * (d - 1)
	i %= period
	if i < 0 {
		i += period
	}
	if i >= d {
		i = period - i
	}
	return i
}
