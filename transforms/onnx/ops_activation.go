package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Relu (opsets 1, 6, 13, 14), LeakyRelu (1, 6, 16), HardSigmoid (1, 6),
// HardSwish (14), Elu (1, 6) and Clip (1, 6, 11, 12, 13): the activations.
// All but Clip are unary kernels (ops_math.go).
//
// NaN stays NaN through every activation (Relu is NumPy's maximum(x, 0),
// which propagates it). Relu takes signed integers from opset 14 (and
// here at any opset).
//
// Clip's bounds are the attributes min and max before opset 11 (opset 1:
// a bound not set is no bound; opset 6: they default to float32's lowest
// and highest values, so ±Inf clip to them, as in ONNX Runtime), and the
// optional inputs min and max from 11 (one-element tensors of the input's
// type, read when the model runs; integer types from opset 12). A bound
// left out is no bound (as in ONNX's reference implementation). The output is
// Min(max, Max(input, min)), as ONNX specifies: all max when min > max,
// NaN where the input is NaN, all NaN when a bound is NaN.

func init() {
	RegisterOp(OpDef{Name: "Relu", Versions: []int{1, 6, 13, 14}, New: newUnary(unRelu)})
	RegisterOp(OpDef{Name: "LeakyRelu", Versions: []int{1, 6, 16}, New: newUnary(unLeakyRelu)})
	RegisterOp(OpDef{Name: "HardSigmoid", Versions: []int{1, 6}, New: newUnary(unHardSigmoid)})
	RegisterOp(OpDef{Name: "HardSwish", Versions: []int{14}, New: newUnary(unHardSwish)})
	RegisterOp(OpDef{Name: "Elu", Versions: []int{1, 6}, New: newUnary(unElu)})
	RegisterOp(OpDef{Name: "Clip", Versions: []int{1, 6, 11, 12, 13}, New: newClip})
}

// activate32 computes the activations for float32s: Relu on Clip's vector
// kernel and HardSigmoid and HardSwish on theirs where there is one, Elu
// on expm1f, the others as for float64.
func (k *ewUnary) activate32(x, y []float32) {
	switch k.op {
	case unRelu:
		// Clip's vector kernel where there is one (-0 stays -0 there).
		if clampF32(y[:len(x)], x, 0, float32(math.Inf(1))) {
			return
		}
	case unHardSigmoid, unHardSwish:
		if hardF32(y[:len(x)], x, k.alpha, k.beta, k.op == unHardSwish) {
			return
		}
	case unElu:
		alpha := k.alpha
		for i, v := range x {
			if v < 0 {
				v = alpha * expm1f(v)
			}
			y[i] = v
		}
		return
	case unFloor, unCeil, unRound, unThresholdedRelu, unSoftsign, unSelu, unCelu, unGelu, unGeluTanh, unSoftplus, unMish, unSin, unCos:
		unaryMore32(k, x, y)
		return
	}
	activateFloats(k, x, y)
}

// activateFloats computes the activations with math's float64 functions
// (float32's Relu and Elu have loops of their own, activate32).
func activateFloats[T floatElem](k *ewUnary, x, y []T) {
	alpha, beta := T(k.alpha), T(k.beta)
	if k.op == unHardSwish {
		alpha = T(1.0 / 6)
	}
	switch k.op {
	case unRelu:
		// max, not a branch: random signs mispredict; max keeps NaN and
		// turns -0 into 0.
		for i, v := range x {
			y[i] = max(v, 0)
		}
	case unLeakyRelu:
		// Branch-free, as Relu: one of the two terms is ±0.
		for i, v := range x {
			y[i] = max(v, 0) + alpha*min(v, 0)
		}
	case unHardSigmoid:
		for i, v := range x {
			y[i] = clamp01(alpha*v + beta)
		}
	case unHardSwish:
		for i, v := range x {
			y[i] = v * clamp01(v*alpha+beta)
		}
	case unElu:
		for i, v := range x {
			if v < 0 {
				v = alpha * T(math.Expm1(float64(v)))
			}
			y[i] = v
		}
	default:
		unaryMore(k, x, y)
	}
}

// clamp01 is v limited to [0, 1], NaN kept.
func clamp01[T floatElem](v T) T {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

// clip is Clip's kernel; lo and hi are the attribute bounds (opsets < 11).
type clipKernel struct {
	inputs       bool // the bounds are inputs (opset 11 on)
	lo, hi       float64
	hasLo, hasHi bool
}

func newClip(n *Node) (Kernel, error) {
	k := &clipKernel{inputs: n.Since >= 11}
	if k.inputs {
		return k, n.CheckArity(1, 3, 1, 1)
	}
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	if n.Since == 1 {
		a.Ignore("consumed_inputs")
		k.hasLo, k.hasHi = a.Has("min"), a.Has("max")
	} else {
		k.hasLo, k.hasHi = true, true
	}
	k.lo = float64(a.Float("min", -math.MaxFloat32))
	k.hi = float64(a.Float("max", math.MaxFloat32))
	return k, a.Err()
}

func (k *clipKernel) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	if !isNumeric(x.Type) || !k.inputs && !x.Type.IsFloat() {
		return nil, fmt.Errorf("input is %v: Clip takes a number type (a float type before opset 11)", x.Type)
	}
	for i, name := range []string{"", "min", "max"} {
		if i == 0 || i >= len(in) || in[i].Type == nd.Undefined {
			continue
		}
		b := in[i]
		if b.Type != x.Type {
			return nil, fmt.Errorf("%s is %v, the input %v: Clip takes bounds of the input's type", name, b.Type, x.Type)
		}
		if n, _ := nd.Numel(b.Shape); n != 1 {
			return nil, fmt.Errorf("%s has shape %s: Clip takes a one-element bound", name, nd.ShapeString(b.Shape))
		}
	}
	return []Meta{{Type: x.Type, Shape: x.Shape}}, nil
}

func (k *clipKernel) Run(in, out []nd.Array) error {
	f, err := numeric[clipLoop]("Clip", in[0].Type)
	if err != nil {
		return err
	}
	f.clip(k, in, out[0])
	return nil
}

type clipLoop interface {
	clip(k *clipKernel, in []nd.Array, out nd.Array)
}

func (numbers[T, W]) clip(k *clipKernel, in []nd.Array, out nd.Array) { clipRun[T](k, in, out) }

func clipRun[T numElem](k *clipKernel, in []nd.Array, out nd.Array) {
	lo, hi := lowest[T](), highest[T]()
	if k.inputs {
		if len(in) > 1 && in[1].Type != nd.Undefined {
			lo = nd.MustAs[T](in[1])[0]
		}
		if len(in) > 2 && in[2].Type != nd.Undefined {
			hi = nd.MustAs[T](in[2])[0]
		}
	} else {
		// Attributes (float types only): T is float32 or float64.
		if k.hasLo {
			lo = T(k.lo)
		}
		if k.hasHi {
			hi = T(k.hi)
		}
	}
	x, y := nd.MustAs[T](in[0]), nd.MustAs[T](out)
	parallel.For(len(x), 1, func(l, h int) { clipSeq(y[l:h], x[l:h], lo, hi) })
}

// clipSeq writes min(max(x[i], lo), hi) to y[i] on the calling goroutine
// (y may be x): Clip's loop, which a fused Conv's epilogue runs too.
func clipSeq[T numElem](y, x []T, lo, hi T) {
	if lo != lo || hi != hi { // a NaN bound: Max or Min with NaN is NaN
		nan := lo
		if hi != hi {
			nan = hi
		}
		for i := range x {
			y[i] = nan
		}
		return
	}
	if x32, ok := any(x).([]float32); ok && clampF32(any(y).([]float32), x32, float32(lo), float32(hi)) {
		return
	}
	// min and max, not branches: random values mispredict. NaN stays NaN
	// (Go's min and max propagate it).
	for i, v := range x {
		y[i] = min(max(v, lo), hi)
	}
}
