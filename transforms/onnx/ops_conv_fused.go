package onnx

import (
	"fmt"
	"math"
	"strings"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// A fused Conv: a Conv whose output only an Add of a residual and/or an
// activation read, planned as one step (plan_fuse.go) that applies them
// to each output value in the task that wrote it, while it is in cache,
// instead of in passes of their own over the whole output (as ONNX
// Runtime's FusedConv, https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html).
// On the device the bias, the residual and the activation are one kernel
// after the products (ops_conv_gpu.go's conv_epilogue_f32). The graph is
// not changed: the fusion is the plan's, made the same way for the CPU and
// the device.

// An epilogue is what a fused Conv or MatMul (ops_matmul_fused.go) does
// to each output value after its bias: add the residual, then apply the activation (each the computation
// of the operator it replaces, so that the outputs are the unfused plan's,
// bit for bit).
type epilogue struct {
	// head is the operator the epilogue follows: Conv or MatMul.
	head string
	// residual says the step's fourth input is the residual Z (Y = act(conv
	// + Z)).
	residual bool
	// unary is the activation when it is a one-input operator (Relu,
	// HardSwish, Sigmoid, ...); nil with clip false: none.
	unary *ewUnary
	// clip, lo and hi: the activation is Clip to [lo, hi] (either NaN:
	// every value NaN).
	clip   bool
	lo, hi float32
	// gelu is the activation when it is GELU as exporters write it with
	// Erf (nil: another or none).
	gelu *geluErf
	// silu: the activation is SiLU (Swish) as exporters write it, x *
	// Sigmoid(x).
	silu bool
	// ops are the fused operators after the Conv, for the step's label.
	ops []string
}

// apply computes the epilogue of the run y (bias added) with z its
// residual (nil: none).
func (e *epilogue) apply(y, z []float32) {
	if z != nil {
		z = z[:len(y)]
		for i := addVec(y, z); i < len(y); i++ {
			y[i] += z[i]
		}
	}
	switch {
	case e.unary != nil:
		e.unary.float32s(y, y)
	case e.clip:
		clipSeq(y, y, e.lo, e.hi)
	case e.gelu != nil:
		e.gelu.apply(y)
	case e.silu:
		siluInPlace(y)
	}
}

// nchwcAct is the activation the blocked kernels apply as they store
// their sums (nchwcTile, nchwcDwTile): a clamp to [lo, hi] (Relu [0,
// +Inf], Clip its bounds, none [-Inf, +Inf]), or, swish, HardSwish: x
// times min(max(x*alpha + beta, lo), hi), lo and hi 0 and 1.
// The kernels read its fields at their offsets (0, 4, 8, 12, 16: keep
// the order).
type nchwcAct struct {
	lo, hi, alpha, beta float32
	swish               bool
}

// nchwcNoAct is no activation: the clamp to [-Inf, +Inf].
var nchwcNoAct = nchwcAct{lo: float32(math.Inf(-1)), hi: float32(math.Inf(1))}

// apply computes a on s in place in Go, as the kernels do (the product and
// the sum of HardSwish each rounded).
func (a nchwcAct) apply(s []float32) {
	switch {
	case a.swish:
		for o, v := range s {
			t := float32(v*a.alpha) + a.beta
			s[o] = v * min(max(t, a.lo), a.hi)
		}
	case a.lo > nchwcNoAct.lo || a.hi < nchwcNoAct.hi:
		for o, v := range s {
			s[o] = min(max(v, a.lo), a.hi)
		}
	}
}

// act returns the epilogue's activation as the blocked kernels apply it
// and ok, where they can: none, Relu, Clip of bounds that are not NaN, and
// on AVX-512 (nchwcWidth 16) HardSwish. A nil epilogue is none.
func (e *epilogue) act() (nchwcAct, bool) {
	switch {
	case e == nil || e.unary == nil && !e.clip && e.gelu == nil && !e.silu:
		return nchwcNoAct, true
	case e.unary != nil && e.unary.op == unRelu:
		return nchwcAct{lo: 0, hi: nchwcNoAct.hi}, true
	case e.unary != nil && e.unary.op == unHardSwish && nchwcWidth == 16:
		return nchwcAct{lo: 0, hi: 1, alpha: e.unary.alpha, beta: e.unary.beta, swish: true}, true
	case e.clip && e.lo == e.lo && e.hi == e.hi:
		return nchwcAct{lo: e.lo, hi: e.hi}, true
	}
	return nchwcAct{}, false
}

// geluErf is GELU, x Φ(x), in the five operators that PyTorch's exports
// (opsets before 20's Gelu) write for it: d = x / √2 (or x times 1/√2),
// Erf, + 1, then x times that, times ½, or ½ x times that
// (x * 0.5 * (1 + erf(x / √2)) written out).
type geluErf struct {
	// div: d = x / c; else d = x * c.
	div bool
	c   float32
	// half is the ½ constant; halfFirst: (x * half) * (erf(d) + 1), else
	// (x * (erf(d) + 1)) * half.
	half      float32
	halfFirst bool
}

// apply computes GELU of each value of y in place, each operation as the
// operator it replaces computes it (Erf's float32 is erff).
func (g *geluErf) apply(y []float32) {
	y = y[geluErfVecF32(y, g):] // the whole vectors, the same operations
	var buf [256]float32        // erf's arguments, then its values, a block at a time
	for len(y) > 0 {
		n := min(len(y), len(buf))
		d := buf[:n]
		if g.div {
			for i, x := range y[:n] {
				d[i] = x / g.c
			}
		} else {
			for i, x := range y[:n] {
				d[i] = x * g.c
			}
		}
		erfInto(d, d)
		for i, x := range y[:n] {
			f := d[i] + 1
			if g.halfFirst {
				y[i] = (x * g.half) * f
			} else {
				y[i] = (x * f) * g.half
			}
		}
		y = y[n:]
	}
}

// applyAll computes the epilogue of the whole output y, spread over the
// cores; a nil e does nothing.
func (e *epilogue) applyAll(y, z []float32) {
	if e == nil {
		return
	}
	parallel.For(len(y), 4, func(lo, hi int) {
		var zs []float32
		if z != nil {
			zs = z[lo:hi]
		}
		e.apply(y[lo:hi], zs)
	})
}

// finish applies p's epilogue (if any) to rows runs of n output values,
// the first at y[off], each ld after the one before.
func (p convProblem) finish(y []float32, off, rows, n, ld int) {
	if p.ep == nil {
		return
	}
	if n == ld { // the runs are one
		n, rows = n*rows, 1
	}
	for r := range rows {
		o := off + r*ld
		var z []float32
		if p.z != nil {
			z = p.z[o : o+n]
		}
		p.ep.apply(y[o:o+n], z)
	}
}

// fusedConv is the kernel of a fused step: inputs X, W, B (or left out)
// and Z (left out without a residual), one output.
type fusedConv struct {
	conv *conv
	ep   *epilogue
}

func (k *fusedConv) Infer(in []Meta) ([]Meta, error) { return k.conv.Infer(in[:3]) }

func (k *fusedConv) Run(in, out []nd.Array) error {
	var z []float32
	if k.ep.residual {
		z = nd.MustAs[float32](in[3])
	}
	return k.conv.run(in[:3], out, k.ep, z)
}

// label names the operators of a fused step: "Conv+Add+Relu".
func (e *epilogue) label() string { return strings.Join(append([]string{e.head}, e.ops...), "+") }

// String describes the epilogue, for tests and logs.
func (e *epilogue) String() string {
	s := e.label()
	if e.gelu != nil {
		s += fmt.Sprintf("[gelu %+v]", *e.gelu)
	}
	if e.clip {
		s += fmt.Sprintf("[%v,%v]", e.lo, e.hi)
	}
	return s
}

// clipBounds are Clip's float32 bounds from its attributes or its known
// inputs; ok false when an input bound is not known before the run.
func clipBounds(k *clipKernel, in []Meta) (lo, hi float32, ok bool) {
	lo, hi = float32(math.Inf(-1)), float32(math.Inf(1))
	if !k.inputs {
		if k.hasLo {
			lo = float32(k.lo)
		}
		if k.hasHi {
			hi = float32(k.hi)
		}
		return lo, hi, true
	}
	for i, b := range []*float32{&lo, &hi} {
		if len(in) <= i+1 || in[i+1].Type == nd.Undefined {
			continue
		}
		if in[i+1].Value == nil || in[i+1].Type != nd.Float32 || in[i+1].Value.Len() != 1 {
			return 0, 0, false
		}
		*b = nd.MustAs[float32](*in[i+1].Value)[0]
	}
	return lo, hi, true
}

// siluInPlace replaces each value x of y by x * sigmoidf(x), as Sigmoid
// then Mul compute it.
func siluInPlace(y []float32) {
	var buf [256]float32
	for lo := 0; lo < len(y); {
		if n := siluVecF32(y[lo:]); n > 0 { // whole vectors, to the first NaN
			lo += n
			continue
		}
		ys := y[lo:min(len(y), lo+len(buf))]
		s := buf[:len(ys)]
		sigmoidInto(s, ys)
		for i, v := range s {
			ys[i] *= v
		}
		lo += len(ys)
	}
}
