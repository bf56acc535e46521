package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Sqrt, Exp, Log, Neg, Abs, Reciprocal, Tanh, Sigmoid (opsets 1, 6, 13)
// and Erf (9, 13): unary math, and the unary kernel that the activations
// of ops_activation.go share. Opset 1's consumed_inputs is read and
// ignored (it described memory reuse).
//
// float32 Exp, Tanh and Sigmoid are computed in float32 by expf, tanhf and
// sigmoidf (numeric.go; within 1e-6 relative of math's float64 functions, a
// few times faster; TestFastMath measures it); Log and Erf are math's
// float64 functions rounded. Neg and Abs take signed integers (Abs any
// integer) and wrap at the most negative value, as C does; Erf of an
// integer is the float64 erf truncated (so 0, or ±1 from |x| >= 6).

func init() {
	for _, op := range []struct {
		name string
		op   unOp
	}{{"Sqrt", unSqrt}, {"Exp", unExp}, {"Log", unLog}, {"Neg", unNeg}, {"Abs", unAbs}, {"Reciprocal", unReciprocal},
		{"Tanh", unTanh}, {"Sigmoid", unSigmoid}} {
		RegisterOp(OpDef{Name: op.name, Versions: []int{1, 6, 13}, New: newUnary(op.op)})
	}
	RegisterOp(OpDef{Name: "Erf", Versions: []int{9, 13}, New: newUnary(unErf)})
}

// unOp is a unary elementwise operation.
type unOp uint8

const (
	unSqrt unOp = iota
	unExp
	unLog
	unNeg
	unAbs
	unReciprocal
	unTanh
	unSigmoid
	unErf
	// activations (ops_activation.go)
	unRelu
	unLeakyRelu
	unHardSigmoid
	unHardSwish
	unElu
	// rounding, trigonometry and the newer activations (ops_unary.go)
	unFloor
	unCeil
	unRound
	unSin
	unCos
	unSoftplus
	unSoftsign
	unSelu
	unCelu
	unThresholdedRelu
	unMish
	unGelu
	unGeluTanh
)

// types is what the op takes: floats only, signed numbers, or any number.
func (op unOp) types() (ints, unsigned bool) {
	switch op {
	case unNeg, unRelu:
		return true, false
	case unAbs, unErf:
		return true, true
	}
	return false, false
}

// unary is the kernel of the one-input elementwise operators; alpha and
// beta are the activations' attributes.
type ewUnary struct {
	op          unOp
	name        string
	alpha, beta float32
}

func newUnary(op unOp) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		if n.Since == 1 {
			n.Attrs.Ignore("consumed_inputs")
		}
		k := &ewUnary{op: op, name: n.Op}
		switch op {
		case unLeakyRelu:
			k.alpha = n.Attrs.Float("alpha", 0.01)
		case unHardSigmoid:
			k.alpha, k.beta = n.Attrs.Float("alpha", 0.2), n.Attrs.Float("beta", 0.5)
		case unHardSwish:
			k.alpha, k.beta = 1.0/6, 0.5
		case unElu:
			k.alpha = n.Attrs.Float("alpha", 1)
		default:
			readUnaryAttrs(k, n)
		}
		return k, n.Attrs.Err()
	}
}

func (k *ewUnary) Infer(in []Meta) ([]Meta, error) {
	t := in[0].Type
	ints, unsigned := k.op.types()
	switch {
	case t.IsFloat():
	case t.IsInt() && ints && (unsigned || t.IsSigned()):
	default:
		want := "a float type"
		if ints {
			want = "a float or signed integer type"
			if unsigned {
				want = "a number type"
			}
		}
		return nil, fmt.Errorf("%s of %v: takes %s", k.name, t, want)
	}
	return []Meta{{Type: t, Shape: in[0].Shape}}, nil
}

// cost is the work of one element, in adds, for parallel.For.
func (op unOp) cost() int {
	switch op {
	case unNeg, unAbs, unRelu, unLeakyRelu, unHardSigmoid, unHardSwish:
		return 1
	case unSqrt, unReciprocal:
		return 4
	}
	return 16
}

func (k *ewUnary) Run(in, out []nd.Array) error {
	x, y := in[0], out[0]
	if x.Type == nd.Float32 { // loops of its own, on the fast float32 functions
		xs, ys := nd.MustAs[float32](x), nd.MustAs[float32](y)
		parallel.For(len(xs), k.op.cost(), func(lo, hi int) { k.float32s(xs[lo:hi], ys[lo:hi]) })
		return nil
	}
	var f unaryLoop
	var err error
	if x.Type.IsFloat() {
		f, err = floating[unaryLoop](k.name, x.Type)
	} else {
		f, err = integer[unaryLoop](k.name, x.Type)
	}
	if err != nil {
		return err
	}
	f.unary(k, x, y)
	return nil
}

type unaryLoop interface {
	unary(k *ewUnary, x, y nd.Array)
}

func (floats[T]) unary(k *ewUnary, x, y nd.Array) {
	xs, ys := nd.MustAs[T](x), nd.MustAs[T](y)
	parallel.For(len(xs), k.op.cost(), func(lo, hi int) { unaryFloats(k, xs[lo:hi], ys[lo:hi]) })
}

func (ints[T]) unary(k *ewUnary, x, y nd.Array) { unaryInts(k.op, nd.MustAs[T](x), nd.MustAs[T](y)) }

// float32s computes y = op(x) for float32s.
func (k *ewUnary) float32s(x, y []float32) {
	y = y[:len(x)]
	switch k.op {
	case unSqrt, unNeg, unReciprocal:
		unaryFloats(k, x, y)
	case unExp:
		expSubInto(y, x, 0)
	case unAbs:
		for i, v := range x {
			y[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		}
	case unTanh:
		tanhInto(y, x)
	case unSigmoid:
		sigmoidInto(y, x)
	case unErf:
		erfInto(y, x)
	case unLog:
		float32sVia64(k.op, x, y)
	default:
		k.activate32(x, y)
	}
}

// float32sVia64 computes the ops that use math's float64 functions,
// converting through a small float64 buffer: converting each element on
// its own ties every element to the one before (cvtss2sd writes half a
// register), and the calls no longer overlap.
func float32sVia64(op unOp, x, y []float32) {
	var buf [256]float64
	for lo := 0; lo < len(x); lo += len(buf) {
		b := buf[:min(len(buf), len(x)-lo)]
		for i, v := range x[lo : lo+len(b)] {
			b[i] = float64(v)
		}
		switch op {
		case unLog:
			for i, v := range b {
				b[i] = math.Log(v)
			}
		}
		out := y[lo : lo+len(b)]
		for i, v := range b {
			out[i] = float32(v)
		}
	}
}

// unaryFloats computes y = op(x) with math's float64 functions (float32's
// Exp, Abs, Tanh, Sigmoid, Erf, Log and activations have loops of their
// own, float32s).
func unaryFloats[T floatElem](k *ewUnary, x, y []T) {
	y = y[:len(x)]
	switch k.op {
	case unSqrt:
		for i, v := range x {
			y[i] = T(math.Sqrt(float64(v)))
		}
	case unExp:
		for i, v := range x {
			y[i] = T(math.Exp(float64(v)))
		}
	case unLog:
		for i, v := range x {
			y[i] = T(math.Log(float64(v)))
		}
	case unNeg:
		for i, v := range x {
			y[i] = -v
		}
	case unAbs:
		for i, v := range x {
			y[i] = T(math.Abs(float64(v)))
		}
	case unReciprocal:
		for i, v := range x {
			y[i] = 1 / v
		}
	case unTanh:
		for i, v := range x {
			y[i] = T(math.Tanh(float64(v)))
		}
	case unSigmoid:
		for i, v := range x {
			y[i] = T(sigmoid64(float64(v)))
		}
	case unErf:
		for i, v := range x {
			y[i] = T(math.Erf(float64(v)))
		}
	default:
		activateFloats(k, x, y)
	}
}

// unaryInts computes the ops that take integers: Neg, Abs, Relu, Erf.
func unaryInts[T intElem](op unOp, x, y []T) {
	y = y[:len(x)]
	switch op {
	case unNeg:
		for i, v := range x {
			y[i] = -v
		}
	case unAbs:
		for i, v := range x {
			if v < 0 {
				v = -v
			}
			y[i] = v
		}
	case unRelu:
		for i, v := range x {
			y[i] = max(v, 0)
		}
	case unErf:
		for i, v := range x {
			y[i] = T(truncI64(math.Erf(float64(v))))
		}
	}
}

// sigmoid64 is 1/(1+e^-x), computed without overflow for either sign.
func sigmoid64(x float64) float64 {
	t := math.Exp(-math.Abs(x))
	if x >= 0 {
		return 1 / (1 + t)
	}
	return t / (1 + t)
}
