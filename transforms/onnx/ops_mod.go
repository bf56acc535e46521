package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Mod (opsets 10, 13) and PRelu (1, 6, 7, 9, 16): binary elementwise
// operators on the broadcasting loop of ops_elementwise.go (ewLoop), and on
// the device binary_f32, binary_i64 and binary_i32 (ops_elementwise.cu).
//
// Mod with fmod=0 takes integers and gives the remainder of floor division
// (the divisor's sign, Python's %); with fmod=1 C's fmod (the dividend's
// sign), of floats or integers. An integer remainder by 0 is 0 (NumPy's).
// PRelu is x where x >= 0 and slope x x elsewhere (NaN stays NaN), slope
// broadcast to X's shape (unidirectionally); before opset 7 a slope of C
// values (X's channels) is one per channel, as PyTorch exported it.

func init() {
	RegisterOp(OpDef{Name: "Mod", Versions: []int{10, 13}, New: newMod})
	RegisterOp(OpDef{Name: "PRelu", Versions: []int{1, 6, 7, 9, 16}, New: newPRelu})
}

// ewExtra is the kernel of Mod and PRelu.
type ewExtra struct {
	op     ewOp
	name   string
	legacy bool // PRelu before opset 7: a slope of C values is per channel
}

func newMod(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	k := &ewExtra{op: ewMod, name: n.Op}
	if n.Attrs.Flag("fmod", false) {
		k.op = ewFmod
	}
	return k, n.Attrs.Err()
}

func newPRelu(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if n.Since == 1 {
		n.Attrs.Ignore("consumed_inputs")
	}
	return &ewExtra{op: ewPRelu, name: n.Op, legacy: n.Since < 7}, n.Attrs.Err()
}

// shape gives the shape B is read with and the output's. Before opset 7
// PRelu's slope of X's channels (C values, as PyTorch's exporter wrote a
// multi-parameter PReLU) is one per channel: read as C x 1 x ... x 1.
func (k *ewExtra) shape(a, b []int) (bShape, out []int, err error) {
	if k.op != ewPRelu {
		out, err = BroadcastShapes(a, b)
		return b, out, err
	}
	if k.legacy && len(b) == 1 && len(a) >= 2 && b[0] == a[1] && b[0] != 1 {
		bShape = make([]int, len(a)-1)
		for i := range bShape {
			bShape[i] = 1
		}
		bShape[0] = b[0]
		b = bShape
	}
	if !unidirectional(b, a) {
		return nil, nil, fmt.Errorf("slope of shape %s does not broadcast to X's %s", nd.ShapeString(b), nd.ShapeString(a))
	}
	return b, a, nil
}

func (k *ewExtra) Infer(in []Meta) ([]Meta, error) {
	a, b := in[0], in[1]
	switch {
	case a.Type != b.Type:
		return nil, fmt.Errorf("inputs of types %v and %v: %s takes two of one type", a.Type, b.Type, k.name)
	case !isNumeric(a.Type):
		return nil, fmt.Errorf("%s of %v inputs: not a number type", k.name, a.Type)
	case k.op == ewMod && a.Type.IsFloat():
		return nil, fmt.Errorf("%s of %v with fmod=0: floats take fmod=1 (C's fmod)", k.name, a.Type)
	}
	_, out, err := k.shape(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: a.Type, Shape: out}}, nil
}

func (k *ewExtra) Run(in, out []nd.Array) error {
	a, b, c := in[0], in[1], out[0]
	var f extraLoop
	var err error
	if a.Type.IsFloat() {
		f, err = floating[extraLoop](k.name, a.Type)
	} else {
		f, err = integer[extraLoop](k.name, a.Type)
	}
	if err != nil {
		return err
	}
	bShape, _, err := k.shape(a.Shape, b.Shape)
	if err != nil {
		return err
	}
	f.extra(k.op, newEWLoop(c.Shape, a.Shape, bShape), a, b, c)
	return nil
}

type extraLoop interface {
	extra(op ewOp, l *ewLoop, a, b, c nd.Array)
}

func (floats[T]) extra(op ewOp, l *ewLoop, a, b, c nd.Array) {
	f := func(x, y T) T { return T(math.Mod(float64(x), float64(y))) }
	var run func(z, x, y []T, sy int) bool
	switch f32 := a.Type == nd.Float32; { // T is float32 where f32
	case op == ewPRelu && f32:
		f, run = prelu[T], any(preluRun).(func(z, x, y []T, sy int) bool)
	case op == ewPRelu:
		f = prelu[T]
	case f32:
		f, run = any(fmod32).(func(x, y T) T), any(fmodRun).(func(z, x, y []T, sy int) bool)
	}
	extraWalk(l, a, b, c, f, run)
}

// fmodRun is fmod's run for extraWalk: both inputs in a row.
func fmodRun(z, x, y []float32, sy int) bool {
	if sy != 1 {
		return false
	}
	fmodF32(z, x, y)
	return true
}

// preluRun is PRelu's run for extraWalk: one slope for the run (a
// channel's), whole vectors on preluVec's kernel.
func preluRun(z, x, y []float32, sy int) bool {
	if sy != 0 {
		return false
	}
	s := y[0]
	for i := preluVec(z, x, s); i < len(z); i++ {
		z[i] = prelu(x[i], s)
	}
	return true
}

// fmod32 is math.Mod of float32s, the same value: x - q y in float64 with
// q the float64 quotient truncated (q y and the difference are exact for q
// below 2^24); math.Mod past that, and for NaN, ±Inf and y = 0. The two
// corrections by one y are a guard: for float32 operands the quotient's
// rounding should not cross an integer below 2^24, and TestFmod32 finds
// no case where it does.
func fmod32(x, y float32) float32 {
	xd, yd := float64(x), float64(y)
	q := math.Trunc(xd / yd)
	if !(math.Abs(q) < 1<<24) || yd == 0 || math.IsInf(yd, 0) {
		return float32(math.Mod(xd, yd))
	}
	r := xd - q*yd // exact: q has at most 24 bits, and x - q y cancels
	ay := math.Abs(yd)
	switch {
	case r != 0 && (r < 0) != (xd < 0): // q one too many
		r += math.Copysign(ay, xd)
	case math.Abs(r) >= ay: // q one too few
		r -= math.Copysign(ay, xd)
	}
	if r == 0 {
		r = math.Copysign(0, xd)
	}
	return float32(r)
}

func (ints[T]) extra(op ewOp, l *ewLoop, a, b, c nd.Array) {
	f := func(x, y T) T { return intMod(op, x, y) }
	if op == ewPRelu {
		f = prelu[T]
	}
	extraWalk(l, a, b, c, f, nil)
}

// extraWalk writes f(x, y) to c along l; run, where not nil, is offered
// each run where x lies in a row and y in a row (sy 1) or is one value (sy
// 0), and reports whether it took it (a vector kernel's).
func extraWalk[T numElem](l *ewLoop, a, b, c nd.Array, f func(x, y T) T, run func(z, x, y []T, sy int) bool) {
	x, y, z := nd.MustAs[T](a), nd.MustAs[T](b), nd.MustAs[T](c)
	sx, sy := l.inner[0], l.inner[1]
	l.walk(2, func(o int, off []int, n int) {
		xs, ys, zs := ewSlice(x, off[0], sx, n), ewSlice(y, off[1], sy, n), z[o:o+n]
		if run != nil && sx == 1 && run(zs, xs, ys, sy) {
			return
		}
		for i := range zs {
			zs[i] = f(xs[i*sx], ys[i*sy])
		}
	})
}

// fmodF32 writes fmod32(x[i], y[i]) to z[i]: blocks on fmodVec's kernel,
// those it leaves (and the rest) by fmod32.
func fmodF32(z, x, y []float32) {
	x, y = x[:len(z)], y[:len(z)]
	for i := 0; i < len(z); {
		i += fmodVec(z[i:], x[i:], y[i:])
		for end := min(i+4, len(z)); i < end; i++ {
			z[i] = fmod32(x[i], y[i])
		}
	}
}

func prelu[T numElem](x, slope T) T {
	if x < 0 {
		return slope * x
	}
	return x
}

// intMod is the remainder of integers: fmod's (ewFmod) or floor
// division's (ewMod); 0 for a divisor of 0.
func intMod[T intElem](op ewOp, x, y T) T {
	if y == 0 {
		return 0
	}
	r := x % y
	if op == ewMod && r != 0 && (r < 0) != (y < 0) {
		r += y
	}
	return r
}
