package onnx

import (
	"fmt"
	"math"
)

// Floor, Ceil (opsets 1, 6, 13), Round (11), Sin, Cos (7), Softplus,
// Softsign (1), Selu (1, 6), Celu (12), ThresholdedRelu (10), Mish (18)
// and Gelu (20, approximate none or tanh): unary kernels of ops_math.go
// (ewUnary), so that each is a line of registration here, a case of
// unaryMore and one of kernels.cuh's unary_op, and fuses into a Conv's
// epilogue as the other activations do. Each is computed in float64 and
// rounded on the device and for float64 and float16 on the CPU; float32
// on the CPU takes loops of its own (ops_unary32.go: Floor, Ceil, Round,
// ThresholdedRelu and Softsign the same bits, the others in float32 within
// 1e-6 of the float64 value); Round rounds half to even (as
// NumPy and ONNX), Softplus is log(1 + e^x) without overflow, and NaN
// stays NaN.

func init() {
	for _, op := range []struct {
		name     string
		op       unOp
		versions []int
	}{
		{"Floor", unFloor, []int{1, 6, 13}}, {"Ceil", unCeil, []int{1, 6, 13}}, {"Round", unRound, []int{11}},
		{"Sin", unSin, []int{7}}, {"Cos", unCos, []int{7}}, {"Softplus", unSoftplus, []int{1}}, {"Softsign", unSoftsign, []int{1}},
		{"Selu", unSelu, []int{1, 6}}, {"Celu", unCelu, []int{12}}, {"ThresholdedRelu", unThresholdedRelu, []int{10}},
		{"Mish", unMish, []int{18}}, {"Gelu", unGelu, []int{20}},
	} {
		RegisterOp(OpDef{Name: op.name, Versions: op.versions, New: newUnary(op.op)})
	}
}

// readUnaryAttrs reads the attributes of this file's operators into k.
func readUnaryAttrs(k *ewUnary, n *Node) {
	a := n.Attrs
	switch k.op {
	case unSelu:
		k.alpha, k.beta = a.Float("alpha", 1.67326319217681884765625), a.Float("gamma", 1.05070102214813232421875)
	case unCelu:
		k.alpha = a.Float("alpha", 1)
		if k.alpha == 0 {
			a.Fail("attribute alpha is 0: Celu divides by it")
		}
	case unThresholdedRelu:
		k.alpha = a.Float("alpha", 1)
	case unGelu:
		approx := a.String("approximate", "none")
		a.OneOf("approximate", approx, "none", "tanh")
		if approx == "tanh" {
			k.op = unGeluTanh
		}
	}
}

// unaryMore computes this file's operators: each value in float64,
// rounded to T.
func unaryMore[T floatElem](k *ewUnary, x, y []T) {
	f := unaryFunc(k)
	for i, v := range x {
		y[i] = T(f(float64(v)))
	}
}

// unaryFunc is k's operation on a float64.
func unaryFunc(k *ewUnary) func(float64) float64 {
	a, b := float64(k.alpha), float64(k.beta)
	switch k.op {
	case unFloor:
		return math.Floor
	case unCeil:
		return math.Ceil
	case unRound:
		return math.RoundToEven
	case unSin:
		return math.Sin
	case unCos:
		return math.Cos
	case unSoftplus:
		return softplus
	case unSoftsign:
		return func(v float64) float64 { return v / (1 + math.Abs(v)) }
	case unSelu:
		return func(v float64) float64 {
			if v > 0 {
				return b * v
			}
			return b * (a * math.Expm1(v))
		}
	case unCelu:
		return func(v float64) float64 {
			var lo float64
			if v < 0 {
				lo = a * math.Expm1(v/a)
			}
			return max(v, 0) + lo
		}
	case unThresholdedRelu:
		af := float32(a)
		return func(v float64) float64 {
			if v != v || float32(v) > af {
				return v
			}
			return 0
		}
	case unMish:
		return func(v float64) float64 { return v * math.Tanh(softplus(v)) }
	case unGelu:
		return func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v*0.70710678118654752440)) }
	case unGeluTanh:
		return func(v float64) float64 {
			return 0.5 * v * (1 + math.Tanh(0.79788456080286535588*(v+0.044715*v*v*v)))
		}
	}
	panic(fmt.Sprintf("onnx: unaryFunc: unary operation %d is not this file's", k.op))
}

// softplus is log(1 + e^x), without overflow for large x.
func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}
