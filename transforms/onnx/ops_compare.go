package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Equal (opsets 1, 7, 11, 13), Less and Greater (1, 7, 9, 13), Not (1) and
// Where (9, 16): comparisons, logic and selection.
//
// The comparisons are binary kernels (ops_elementwise.go: legacy
// broadcasting before opset 7) of any number type, and Equal of bools too,
// at every opset; their output is bool. NaN compares unequal to
// everything, itself included. Where selects from X where the condition
// is true and from Y elsewhere, all three broadcast together; X and Y may
// be of any type (the loop moves elements by their size).

func init() {
	RegisterOp(OpDef{Name: "Equal", Versions: []int{1, 7, 11, 13}, New: newBinary(ewEqual, 7)})
	RegisterOp(OpDef{Name: "Less", Versions: []int{1, 7, 9, 13}, New: newBinary(ewLess, 7)})
	RegisterOp(OpDef{Name: "Greater", Versions: []int{1, 7, 9, 13}, New: newBinary(ewGreater, 7)})
	RegisterOp(OpDef{Name: "Not", Versions: []int{1}, New: func(n *Node) (Kernel, error) {
		return notKernel{}, n.CheckArity(1, 1, 1, 1)
	}})
	RegisterOp(OpDef{Name: "Where", Versions: []int{9, 16}, New: func(n *Node) (Kernel, error) {
		return whereKernel{}, n.CheckArity(3, 3, 1, 1)
	}})
}

// compareRun computes c = a op b (bool) over l; name names the operator
// in errors.
func compareRun(name string, op ewOp, l *ewLoop, a, b, c nd.Array) error {
	if a.Type == nd.Bool { // bools hold 0 or 1: equal as bytes
		a.Type, b.Type = nd.Uint8, nd.Uint8
	}
	f, err := numeric[compareLoop](name, a.Type)
	if err != nil {
		return err
	}
	f.compare(op, l, a, b, c)
	return nil
}

type compareLoop interface {
	compare(op ewOp, l *ewLoop, a, b, c nd.Array)
}

func (numbers[T, W]) compare(op ewOp, l *ewLoop, a, b, c nd.Array) { compareWalk[T](op, l, a, b, c) }

func compareWalk[T numElem](op ewOp, l *ewLoop, a, b, c nd.Array) {
	x, y, z := nd.MustAs[T](a), nd.MustAs[T](b), nd.MustAs[bool](c)
	sx, sy := l.inner[0], l.inner[1]
	l.walk(1, func(o int, off []int, n int) {
		compare(op, ewSlice(x, off[0], sx, n), sx, ewSlice(y, off[1], sy, n), sy, z[o:o+n])
	})
}

// compare computes z = x op y, x and y of stride sx and sy (0 or 1).
func compare[T numElem](op ewOp, x []T, sx int, y []T, sy int, z []bool) {
	n := len(z)
	switch {
	case sx == 1 && sy == 1:
		x, y = x[:n], y[:n]
		switch op {
		case ewEqual:
			for i := range z {
				z[i] = x[i] == y[i]
			}
		case ewLess:
			for i := range z {
				z[i] = x[i] < y[i]
			}
		case ewGreater:
			for i := range z {
				z[i] = x[i] > y[i]
			}
		}
	case sx == 1:
		x = x[:n]
		s := y[0]
		switch op {
		case ewEqual:
			for i := range z {
				z[i] = x[i] == s
			}
		case ewLess:
			for i := range z {
				z[i] = x[i] < s
			}
		case ewGreater:
			for i := range z {
				z[i] = x[i] > s
			}
		}
	case sy == 1: // x one element: y op' x
		flip := op
		switch op {
		case ewLess:
			flip = ewGreater
		case ewGreater:
			flip = ewLess
		}
		compare(flip, y, sy, x, sx, z)
	default: // both one element
		var v [1]bool
		compare(op, x[:1], 1, y[:1], 1, v[:])
		for i := range z {
			z[i] = v[0]
		}
	}
}

// notKernel is Not: logical negation of bools.
type notKernel struct{}

func (notKernel) Infer(in []Meta) ([]Meta, error) {
	if in[0].Type != nd.Bool {
		return nil, fmt.Errorf("input is %v: Not takes bool", in[0].Type)
	}
	return []Meta{{Type: nd.Bool, Shape: in[0].Shape}}, nil
}

func (notKernel) Run(in, out []nd.Array) error {
	x, y := in[0].Data, out[0].Data
	parallel.For(len(x), 1, func(lo, hi int) {
		for i, v := range x[lo:hi] {
			y[lo+i] = v ^ 1 // bools hold 0 or 1
		}
	})
	return nil
}

// whereKernel is Where: out = condition ? X : Y, broadcast.
type whereKernel struct{}

func (whereKernel) Infer(in []Meta) ([]Meta, error) {
	c, x, y := in[0], in[1], in[2]
	if c.Type != nd.Bool {
		return nil, fmt.Errorf("condition is %v: Where takes a bool condition", c.Type)
	}
	if x.Type != y.Type {
		return nil, fmt.Errorf("inputs X and Y are %v and %v: Where takes X and Y of one type", x.Type, y.Type)
	}
	out, err := BroadcastShapes(c.Shape, x.Shape, y.Shape)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: x.Type, Shape: out}}, nil
}

func (whereKernel) Run(in, out []nd.Array) error {
	c, x, y, z := in[0], in[1], in[2], out[0]
	l := newEWLoop(z.Shape, c.Shape, x.Shape, y.Shape)
	cond := nd.MustAs[bool](c)
	switch x.Type.Size() {
	case 1:
		whereWalk(l, cond, asBits[uint8](x), asBits[uint8](y), asBits[uint8](z))
	case 2:
		whereWalk(l, cond, asBits[uint16](x), asBits[uint16](y), asBits[uint16](z))
	case 4:
		whereWalk(l, cond, asBits[uint32](x), asBits[uint32](y), asBits[uint32](z))
	case 8:
		whereWalk(l, cond, asBits[uint64](x), asBits[uint64](y), asBits[uint64](z))
	default:
		return fmt.Errorf("input type %v is not supported", x.Type)
	}
	return nil
}

// asBits views a's elements as unsigned integers of their size.
func asBits[T uint8 | uint16 | uint32 | uint64](a nd.Array) []T {
	return nd.MustAs[T](nd.Array{Type: nd.TypeOf[T](), Shape: a.Shape, Data: a.Data})
}

func whereWalk[T uint8 | uint16 | uint32 | uint64](l *ewLoop, c []bool, x, y, z []T) {
	sc, sx, sy := l.inner[0], l.inner[1], l.inner[2]
	l.walk(1, func(o int, off []int, n int) {
		cs, xs, ys, zs := ewSlice(c, off[0], sc, n), ewSlice(x, off[1], sx, n), ewSlice(y, off[2], sy, n), z[o:o+n]
		if sc == 1 && sx == 1 && sy == 1 {
			cs, xs, ys = cs[:n], xs[:n], ys[:n]
			for i := range zs {
				if cs[i] {
					zs[i] = xs[i]
				} else {
					zs[i] = ys[i]
				}
			}
			return
		}
		for i := range zs {
			if cs[i*sc] {
				zs[i] = xs[i*sx]
			} else {
				zs[i] = ys[i*sy]
			}
		}
	})
}
