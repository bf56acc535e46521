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
// sigmoidf below (within 1e-6 relative of math's float64 functions, a few
// times faster; TestFastMath measures it); Log and Erf are math's float64
// functions rounded. Neg and Abs take signed integers (Abs any integer)
// and wrap at the most negative value, as C does; Erf of an integer is
// the float64 erf truncated (so 0, or ±1 from |x| >= 6).

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

// unaryCost is the work of one element, in adds, for ParallelFor.
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
	n := x.Len()
	switch x.Type {
	case nd.Float32:
		xs, ys := nd.MustAs[float32](x), nd.MustAs[float32](y)
		parallel.For(n, k.op.cost(), func(lo, hi int) { k.float32s(xs[lo:hi], ys[lo:hi]) })
	case nd.Float64:
		xs, ys := nd.MustAs[float64](x), nd.MustAs[float64](y)
		parallel.For(n, k.op.cost(), func(lo, hi int) { k.float64s(xs[lo:hi], ys[lo:hi]) })
	case nd.Int8:
		unaryInts(k.op, nd.MustAs[int8](x), nd.MustAs[int8](y))
	case nd.Int16:
		unaryInts(k.op, nd.MustAs[int16](x), nd.MustAs[int16](y))
	case nd.Int32:
		unaryInts(k.op, nd.MustAs[int32](x), nd.MustAs[int32](y))
	case nd.Int64:
		unaryInts(k.op, nd.MustAs[int64](x), nd.MustAs[int64](y))
	case nd.Uint8:
		unaryInts(k.op, nd.MustAs[uint8](x), nd.MustAs[uint8](y))
	case nd.Uint16:
		unaryInts(k.op, nd.MustAs[uint16](x), nd.MustAs[uint16](y))
	case nd.Uint32:
		unaryInts(k.op, nd.MustAs[uint32](x), nd.MustAs[uint32](y))
	case nd.Uint64:
		unaryInts(k.op, nd.MustAs[uint64](x), nd.MustAs[uint64](y))
	default:
		return fmt.Errorf("%s of %v is not supported", k.name, x.Type)
	}
	return nil
}

// float32s computes y = op(x) for float32s.
func (k *ewUnary) float32s(x, y []float32) {
	y = y[:len(x)]
	switch k.op {
	case unSqrt:
		for i, v := range x {
			y[i] = float32(math.Sqrt(float64(v)))
		}
	case unExp:
		for i, v := range x {
			y[i] = expf(v)
		}
	case unNeg:
		for i, v := range x {
			y[i] = -v
		}
	case unAbs:
		for i, v := range x {
			y[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		}
	case unReciprocal:
		for i, v := range x {
			y[i] = 1 / v
		}
	case unTanh:
		for i, v := range x {
			y[i] = tanhf(v)
		}
	case unSigmoid:
		for i, v := range x {
			y[i] = sigmoidf(v)
		}
	case unErf:
		for i, v := range x {
			y[i] = erff(v)
		}
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

// float64s computes y = op(x) for float64s.
func (k *ewUnary) float64s(x, y []float64) {
	y = y[:len(x)]
	switch k.op {
	case unSqrt:
		for i, v := range x {
			y[i] = math.Sqrt(v)
		}
	case unExp:
		for i, v := range x {
			y[i] = math.Exp(v)
		}
	case unLog:
		for i, v := range x {
			y[i] = math.Log(v)
		}
	case unNeg:
		for i, v := range x {
			y[i] = -v
		}
	case unAbs:
		for i, v := range x {
			y[i] = math.Abs(v)
		}
	case unReciprocal:
		for i, v := range x {
			y[i] = 1 / v
		}
	case unTanh:
		for i, v := range x {
			y[i] = math.Tanh(v)
		}
	case unSigmoid:
		for i, v := range x {
			y[i] = sigmoid64(v)
		}
	case unErf:
		for i, v := range x {
			y[i] = math.Erf(v)
		}
	default:
		k.activate64(x, y)
	}
}

// unaryInts computes the ops that take integers: Neg, Abs, Relu, Erf.
func unaryInts[T ewInt](op unOp, x, y []T) {
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

// Fast float32 functions. Each computes in float32 from a reduction of its
// argument and a polynomial (Taylor's, truncated where its remainder is
// below 1e-8 relative), and falls back to math's float64 function where
// the fast form does not hold (results that underflow to subnormals or
// overflow; NaN).

const (
	log2eF = float32(1.44269504088896340736)
	// ln2Hi + ln2Lo is ln 2; ln2Hi has 15 significant bits, so that n*ln2Hi
	// is exact for the |n| <= 127 of expf's reduction.
	ln2Hi  = float32(0.693145751953125)
	ln2Lo  = float32(1.42860676533018704e-06)
	roundF = float32(12582912) // 1.5 * 2^23: adding it rounds to an integer
)

// expf is e^x in float32, within 2e-7 relative of math.Exp (TestFastMath).
// x = n ln2 + r with |r| <= ln2/2 (n rounded in float32 by the 1.5*2^23
// trick, r by Cody and Waite's two-part ln 2), e^r by its Taylor
// polynomial of degree 7 (remainder below 6e-9), times 2^n built in the
// exponent bits.
func expf(x float32) float32 {
	if !(x >= -87 && x <= 88) { // results near or past float32's range, NaN
		return float32(math.Exp(float64(x)))
	}
	t := x*log2eF + roundF
	n := t - roundF
	r := (x - n*ln2Hi) - n*ln2Lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	// t's low mantissa bits hold n + 2^22; the exponent field of 2^n is n+127.
	scale := math.Float32frombits((math.Float32bits(t) - 0x4b400000 + 127) << 23)
	return p * scale
}

// erff is erf x in float32, within 1e-6 relative of math.Erf (TestFastMath).
// For |x| < 1, x P(x^2) with P of degree 6; for 1 <= |x| < 4,
// 1 - e^-x^2 R(x - 2.5) with R of degree 10 (erfc x e^x^2 is smooth there);
// beyond, ±1 (erf 4 is 1 - 1.5e-8, which rounds to 1). Both polynomials are
// least-squares fits in float64 on 4,000 Chebyshev nodes of their interval
// (relative weights), rounded to float32, checked in float32 arithmetic
// against math.Erf: 1.9e-7 and 8.4e-8 relative at most.
func erff(x float32) float32 {
	a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	switch {
	case a < 1:
		t := x * x
		return x * (1.1283792 + t*(-0.37612629+t*(0.11283626+t*(-0.0268554+t*(0.0051912186+t*(-0.00080348464+t*7.9334939e-05))))))
	case a < 4:
		u := a - 2.5
		r := 0.21080637 + u*(-0.074347556+u*(0.024937805+u*(-0.0079996092+u*(0.0024674453+u*(-0.00073856639+u*(0.00021110837+u*(-5.3845422e-05+u*(1.5317162e-05+u*(-6.3341831e-06+u*1.4981339e-06)))))))))
		e := 1 - expf(-a*a)*r
		if x < 0 {
			return -e
		}
		return e
	case a == a:
		return math.Float32frombits(math.Float32bits(1) | math.Float32bits(x)&(1<<31))
	}
	return x // NaN
}

// tanhf is tanh x in float32. For |x| < 0.3 its odd Taylor series to x^11
// (remainder below 3e-9 relative); beyond, (1-t)/(1+t) with t = e^-2|x|,
// whose subtraction loses at most a factor 1.25 of expf's precision there.
func tanhf(x float32) float32 {
	a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	if a < 0.3 {
		if a == 0 {
			return x // ±0, its sign kept
		}
		z := x * x
		return x + x*z*(-1.0/3+z*(2.0/15+z*(-17.0/315+z*(62.0/2835+z*(-1382.0/155925)))))
	}
	if a > 10 { // tanh 10 is 1 in float32
		a = 10
	}
	t := expf(-2 * a)
	r := (1 - t) / (1 + t)
	return math.Float32frombits(math.Float32bits(r) | math.Float32bits(x)&(1<<31))
}

// sigmoidf is 1/(1+e^-x) in float32, from t = e^-|x| (at most 1): 1/(1+t)
// for x >= 0 and t/(1+t) below, so that neither overflows nor cancels.
func sigmoidf(x float32) float32 {
	t := expf(-math.Float32frombits(math.Float32bits(x) &^ (1 << 31)))
	if x >= 0 {
		return 1 / (1 + t)
	}
	return t / (1 + t)
}

// expm1f is e^x - 1 for x <= 0 in float32 (Elu's negative side): Taylor's
// polynomial of degree 8 above -0.35 (remainder below 3e-10 relative),
// where e^x - 1 would cancel, and expf(x) - 1 below.
func expm1f(x float32) float32 {
	if x > -0.35 {
		return x * (1 + x*(1.0/2+x*(1.0/6+x*(1.0/24+x*(1.0/120+x*(1.0/720+x*(1.0/5040+x*(1.0/40320))))))))
	}
	return expf(x) - 1
}
