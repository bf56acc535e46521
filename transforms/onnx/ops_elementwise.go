package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Add, Sub, Mul, Div (opsets 1, 6, 7, 13, 14), Pow (1, 7, 12, 13, 15),
// Max, Min (1, 6, 8, 12, 13), Sum and Mean (1, 6, 8, 13); and the machinery of
// every elementwise operator: the broadcasting loop (ewLoop), the binary
// kernel that the comparisons of ops_compare.go also use, and the unary
// kernel of ops_math.go and ops_activation.go.
//
// Before opset 7 the binary operators broadcast only when the node sets
// broadcast=1, and then only B onto A: B's shape lines up with the run of
// A's dimensions that starts at axis (A's last dimensions when axis is not
// set), or B has one element. A dimension of 1 in B also stretches (ONNX
// calls this unsupported, PyTorch's exporter emits it). From opset 7 both
// inputs broadcast (NumPy's rules); Max, Min, Sum and Mean take inputs of
// one shape before opset 8. Mean takes floats: the inputs' sum divided by
// their number.
//
// Integer Div truncates toward zero, as ONNX specifies (C's division); an
// integer divided by zero gives 0 (NumPy's answer, which ONNX's reference
// implementation inherits; C leaves it undefined and Go panics), and the
// most negative value divided by -1 wraps to itself. Max and Min propagate
// NaN (NumPy's maximum and minimum). Pow of an integer base to a negative
// integer exponent is 1/base^-e truncated: 1 for base 1, ±1 for base -1,
// 0 otherwise (0 also for base 0); an integer base to a float exponent is
// computed in float64 and truncated toward zero, as Cast does.
//
// Types beyond a version's list (an int8 Add at opset 7) are accepted and
// computed as the newest version does.

func init() {
	for _, op := range []struct {
		name string
		op   ewOp
	}{{"Add", ewAdd}, {"Sub", ewSub}, {"Mul", ewMul}, {"Div", ewDiv}} {
		RegisterOp(OpDef{Name: op.name, Versions: []int{1, 6, 7, 13, 14}, New: newBinary(op.op, 7)})
	}
	RegisterOp(OpDef{Name: "Pow", Versions: []int{1, 7, 12, 13, 15}, New: newBinary(ewPow, 7)})
	RegisterOp(OpDef{Name: "Max", Versions: []int{1, 6, 8, 12, 13}, New: newVariadic(ewMax)})
	RegisterOp(OpDef{Name: "Min", Versions: []int{1, 6, 8, 12, 13}, New: newVariadic(ewMin)})
	RegisterOp(OpDef{Name: "Sum", Versions: []int{1, 6, 8, 13}, New: newVariadic(ewAdd)})
	RegisterOp(OpDef{Name: "Mean", Versions: []int{1, 6, 8, 13}, New: newVariadic(ewAdd)})
}

// ewOp is a binary elementwise operation.
type ewOp uint8

const (
	ewAdd ewOp = iota
	ewSub
	ewMul
	ewDiv
	ewMax
	ewMin
	ewPow
	ewEqual
	ewLess
	ewGreater
	// Mod and PRelu (ops_mod.go)
	ewMod  // the remainder of floor division: the divisor's sign (integers)
	ewFmod // C's fmod: the dividend's sign
	ewPRelu
)

func (op ewOp) compares() bool { return op == ewEqual || op == ewLess || op == ewGreater }

// ewLoop is an elementwise loop over an output shape whose inputs are
// broadcast to it. Dimensions of 1 are dropped and neighbours merged where
// every input is contiguous across both or broadcast along both, so that
// an op on arrays of one shape is a single run and a row broadcast is
// rows; each run is one call of a slice function, its inputs' strides in
// it 1 (contiguous) or 0 (one element repeated).
type ewLoop struct {
	dims  []int   // merged output dimensions, at least one
	st    [][]int // st[k][d]: input k's element stride along dims[d]
	inner []int   // input k's stride along the last dimension: 0 or 1
	n     int     // output elements
}

// newEWLoop plans the loop over out for inputs of shapes ins, each
// broadcastable to out (Infer checked).
func newEWLoop(out []int, ins ...[]int) *ewLoop {
	if len(ins) > maxEWInputs {
		panic(fmt.Sprintf("newEWLoop: %d inputs, at most %d", len(ins), maxEWInputs))
	}
	l := &ewLoop{n: 1, st: make([][]int, len(ins)), inner: make([]int, len(ins))}
	for _, d := range out {
		l.n *= d
	}
	full := make([][]int, len(ins))
	for k, s := range ins {
		full[k] = BroadcastStrides(s, out)
	}
	for d, size := range out {
		if size == 1 {
			continue
		}
		if last := len(l.dims) - 1; last >= 0 {
			merge := true
			for k := range ins {
				if l.st[k][last] != full[k][d]*size {
					merge = false
					break
				}
			}
			if merge {
				l.dims[last] *= size
				for k := range ins {
					l.st[k][last] = full[k][d]
				}
				continue
			}
		}
		l.dims = append(l.dims, size)
		for k := range ins {
			l.st[k] = append(l.st[k], full[k][d])
		}
	}
	if len(l.dims) == 0 {
		l.dims = []int{1}
		for k := range ins {
			l.st[k] = []int{0}
		}
	}
	for k := range ins {
		l.inner[k] = l.st[k][len(l.dims)-1]
	}
	return l
}

// ewSegment is the longest run one task computes: a long row (all of an op
// on arrays of one shape) is split so that every core takes part.
const ewSegment = 1 << 14

// walk calls fn for runs covering the output in order: o is the run's
// offset in the output, off[k] input k's element offset where it starts,
// n its length. cost is the work of one element (1 for an add). Runs may
// be called concurrently; fn must not keep off.
func (l *ewLoop) walk(cost int, fn func(o int, off []int, n int)) {
	if l.n == 0 {
		return
	}
	tasks, c, split, seg := l.tasks(cost)
	k := len(l.st)
	parallel.For(tasks, c, func(lo, hi int) {
		l.runs(lo, hi, split, seg, func(o int, off [maxEWInputs]int, n int) { fn(o, off[:k], n) })
	})
}

// maxEWInputs is the most inputs an ewLoop takes (Where's three, and one
// to spare).
const maxEWInputs = 4

// tasks cuts the loop into tasks for the cores: each row of the last
// dimension in split segments of seg elements; c is a task's work.
func (l *ewLoop) tasks(cost int) (tasks, c, split, seg int) {
	rowLen := l.dims[len(l.dims)-1]
	rows := l.n / rowLen
	split = (rowLen + ewSegment - 1) / ewSegment
	seg = (rowLen + split - 1) / split
	return rows * split, seg * cost, split, seg
}

// runs calls fn for the runs of tasks lo..hi (tasks' cut), in order, the
// inputs' offsets in off (by value: a slice given to fn would be moved to
// the heap). fn does not escape: a closure passed here stays on its
// caller's stack, and for up to 9 dimensions runs allocates nothing.
func (l *ewLoop) runs(lo, hi, split, seg int, fn func(o int, off [maxEWInputs]int, n int)) {
	last := len(l.dims) - 1
	rowLen := l.dims[last]
	k := len(l.st)
	var offA, baseA [maxEWInputs]int
	var idxA [8]int
	idx := idxA[:0]
	if last > len(idxA) {
		idx = make([]int, last)
	}
	off, base, idx := offA[:k], baseA[:k], idx[:last]
	r, s := lo/split, lo%split
	for d, rem := last-1, r; d >= 0; d-- {
		idx[d] = rem % l.dims[d]
		rem /= l.dims[d]
		for i := range base {
			base[i] += idx[d] * l.st[i][d]
		}
	}
	for range hi - lo {
		j0 := s * seg
		j1 := min(rowLen, j0+seg)
		for i := range off {
			off[i] = base[i] + j0*l.inner[i]
		}
		fn(r*rowLen+j0, offA, j1-j0)
		if s++; s < split {
			continue
		}
		s = 0
		r++
		for d := last - 1; d >= 0; d-- { // the next row: an odometer
			idx[d]++
			for i := range base {
				base[i] += l.st[i][d]
			}
			if idx[d] < l.dims[d] {
				break
			}
			for i := range base {
				base[i] -= idx[d] * l.st[i][d]
			}
			idx[d] = 0
		}
	}
}

// ewSlice is the slice of s that a run of n elements at offset off reads with
// stride st (0: one element).
func ewSlice[T any](s []T, off, st, n int) []T {
	if st == 0 {
		return s[off : off+1]
	}
	return s[off : off+n]
}

// ewBinary is the kernel of the two-input elementwise operators: Add, Sub,
// Mul, Div, Pow and the comparisons.
type ewBinary struct {
	op     ewOp
	name   string
	legacy bool // opset < 7: B broadcasts onto A only with broadcast=1
	bcast  bool
	axis   int64
	hasAx  bool
	loops  byShapes[*ewLoop] // the run's loop, kept
}

// newBinary returns the New of a binary operator whose opsets before
// modern take the legacy broadcast and axis attributes.
func newBinary(op ewOp, modern int) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		if err := n.CheckArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		k := &ewBinary{op: op, name: n.Op}
		if n.Since < modern {
			k.legacy = true
			k.bcast = n.Attrs.Int("broadcast", 0) != 0
			k.hasAx = n.Attrs.Has("axis")
			k.axis = n.Attrs.Int("axis", 0)
			n.Attrs.Ignore("consumed_inputs")
		}
		return k, n.Attrs.Err()
	}
}

// shapes returns the shape with which B is read (B's own, or for legacy
// broadcasting B's padded with trailing 1s to line up at axis) and the
// output's.
func (k *ewBinary) shapes(a, b []int) (bShape, out []int, err error) {
	if !k.legacy {
		out, err = BroadcastShapes(a, b)
		return b, out, err
	}
	if !k.bcast {
		if !nd.SameShape(a, b) {
			return nil, nil, fmt.Errorf("shapes %s and %s differ, and before opset 7 %s broadcasts only with broadcast=1",
				nd.ShapeString(a), nd.ShapeString(b), k.name)
		}
		return b, a, nil
	}
	if n, _ := nd.Numel(b); n == 1 && len(b) <= len(a) {
		return nil, a, nil // one element: a scalar
	}
	axis := len(a) - len(b)
	if k.hasAx {
		ax, err := NormAxis(int(k.axis), len(a))
		if err != nil {
			return nil, nil, err
		}
		axis = ax
	}
	if axis < 0 || axis+len(b) > len(a) {
		return nil, nil, fmt.Errorf("shape %s of B does not fit in A's %s at axis %d", nd.ShapeString(b), nd.ShapeString(a), axis)
	}
	bShape = append(append([]int{}, b...), make([]int, len(a)-axis-len(b))...)
	for i := len(b); i < len(bShape); i++ {
		bShape[i] = 1
	}
	for i, d := range b {
		if d != 1 && d != a[axis+i] {
			return nil, nil, fmt.Errorf("shape %s of B does not match A's %s at axis %d (dimension %d: %d and %d)",
				nd.ShapeString(b), nd.ShapeString(a), axis, axis+i, a[axis+i], d)
		}
	}
	return bShape, a, nil
}

func (k *ewBinary) Infer(in []Meta) ([]Meta, error) {
	a, b := in[0], in[1]
	switch {
	case k.op == ewPow:
		if !isNumeric(a.Type) || !isNumeric(b.Type) {
			return nil, fmt.Errorf("inputs are %v and %v: Pow takes numbers", a.Type, b.Type)
		}
	case a.Type != b.Type:
		return nil, fmt.Errorf("inputs of types %v and %v: %s takes two of one type", a.Type, b.Type, k.name)
	case k.op == ewEqual && a.Type == nd.Bool:
	case !isNumeric(a.Type):
		return nil, fmt.Errorf("%s of %v inputs: not a number type", k.name, a.Type)
	}
	_, out, err := k.shapes(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	t := a.Type
	if k.op.compares() {
		t = nd.Bool
	}
	return []Meta{{Type: t, Shape: out}}, nil
}

func (k *ewBinary) Run(in, out []nd.Array) error {
	a, b, c := in[0], in[1], out[0]
	l, err := k.loops.get(func() (*ewLoop, error) {
		bShape, _, err := k.shapes(a.Shape, b.Shape)
		if err != nil {
			return nil, err
		}
		return newEWLoop(c.Shape, a.Shape, bShape), nil
	}, a.Shape, b.Shape, c.Shape)
	if err != nil {
		return err
	}
	switch {
	case k.op == ewPow:
		return powRun(k.name, l, a, b, c)
	case k.op.compares():
		return compareRun(k.name, k.op, l, a, b, c)
	}
	return arithRun(k.name, k.op, l, a, b, c)
}

// arithRun computes c = a op b over l for the arithmetic ops (Add, Sub,
// Mul, Div, Max, Min) of numeric a and b of one type; name names the
// operator in errors.
func arithRun(name string, op ewOp, l *ewLoop, a, b, c nd.Array) error {
	if fn := arithRanges[a.Type]; fn != nil && l.n > 0 {
		// Not through numeric's loops: their function values are made in
		// generic code, closures over its dictionary, allocated at each run.
		tasks, cost, split, seg := l.tasks(1)
		parallel.ForWith(tasks, cost, arithArgs{l: l, op: op, a: a, b: b, c: c, split: split, seg: seg}, fn)
		return nil
	}
	f, err := numeric[arithLoop](name, a.Type)
	if err != nil {
		return err
	}
	f.arith(op, l, a, b, c)
	return nil
}

type arithLoop interface {
	arith(op ewOp, l *ewLoop, a, b, c nd.Array)
}

func (numbers[T, W]) arith(op ewOp, l *ewLoop, a, b, c nd.Array) {
	arithWalk[T](op, l, a, b, c, !isFloat[T]())
}

// arithArgs are an arithmetic run's: its loop and the loop's tasks
// (ewLoop.tasks), the op and the arrays.
type arithArgs struct {
	l          *ewLoop
	op         ewOp
	a, b, c    nd.Array
	split, seg int
}

// arithRanges are arithRange for the types of most models, instantiated
// here, outside generic code (the others go through numeric's loops).
var arithRanges = map[nd.DType]func(*arithArgs, int, int){
	nd.Float32: arithRange[float32],
	nd.Float64: arithRange[float64],
	nd.Int32:   arithRange[int32],
	nd.Int64:   arithRange[int64],
}

// arithRange computes tasks lo..hi of r.
func arithRange[T numElem](r *arithArgs, lo, hi int) {
	x, y, z := nd.MustAs[T](r.a), nd.MustAs[T](r.b), nd.MustAs[T](r.c)
	sx, sy := r.l.inner[0], r.l.inner[1]
	op, isInt := r.op, !isFloat[T]()
	r.l.runs(lo, hi, r.split, r.seg, func(o int, off [maxEWInputs]int, n int) {
		arith(op, ewSlice(x, off[0], sx, n), sx, ewSlice(y, off[1], sy, n), sy, z[o:o+n], isInt)
	})
}

func arithWalk[T numElem](op ewOp, l *ewLoop, a, b, c nd.Array, isInt bool) {
	x, y, z := nd.MustAs[T](a), nd.MustAs[T](b), nd.MustAs[T](c)
	sx, sy := l.inner[0], l.inner[1]
	l.walk(1, func(o int, off []int, n int) {
		arith(op, ewSlice(x, off[0], sx, n), sx, ewSlice(y, off[1], sy, n), sy, z[o:o+n], isInt)
	})
}

// arith computes z = x op y elementwise, x and y of stride sx and sy (1:
// as long as z; 0: one element). isInt selects integer division.
func arith[T numElem](op ewOp, x []T, sx int, y []T, sy int, z []T, isInt bool) {
	if z32, ok := any(z).([]float32); ok { // the whole vectors on the kernel, the rest here
		if i := arithVecF32(op, any(x).([]float32), sx, any(y).([]float32), sy, z32); i > 0 {
			z = z[i:]
			if sx == 1 {
				x = x[i:]
			}
			if sy == 1 {
				y = y[i:]
			}
		}
	}
	n := len(z)
	switch {
	case sx == 1 && sy == 1:
		x, y = x[:n], y[:n]
		switch op {
		case ewAdd:
			for i := range z {
				z[i] = x[i] + y[i]
			}
		case ewSub:
			for i := range z {
				z[i] = x[i] - y[i]
			}
		case ewMul:
			for i := range z {
				z[i] = x[i] * y[i]
			}
		case ewDiv:
			if isInt {
				for i := range z {
					z[i] = intDiv(x[i], y[i])
				}
				return
			}
			for i := range z {
				z[i] = x[i] / y[i]
			}
		case ewMax:
			for i := range z {
				z[i] = maxNaN(x[i], y[i])
			}
		case ewMin:
			for i := range z {
				z[i] = minNaN(x[i], y[i])
			}
		}
	case sx == 1:
		x = x[:n]
		s := y[0]
		switch op {
		case ewAdd:
			for i := range z {
				z[i] = x[i] + s
			}
		case ewSub:
			for i := range z {
				z[i] = x[i] - s
			}
		case ewMul:
			for i := range z {
				z[i] = x[i] * s
			}
		case ewDiv:
			if isInt {
				if s == 0 {
					clear(z)
					return
				}
				for i := range z {
					z[i] = x[i] / s
				}
				return
			}
			for i := range z {
				z[i] = x[i] / s
			}
		case ewMax:
			for i := range z {
				z[i] = maxNaN(x[i], s)
			}
		case ewMin:
			for i := range z {
				z[i] = minNaN(x[i], s)
			}
		}
	case sy == 1:
		y = y[:n]
		s := x[0]
		switch op {
		case ewAdd:
			for i := range z {
				z[i] = s + y[i]
			}
		case ewSub:
			for i := range z {
				z[i] = s - y[i]
			}
		case ewMul:
			for i := range z {
				z[i] = s * y[i]
			}
		case ewDiv:
			if isInt {
				for i := range z {
					z[i] = intDiv(s, y[i])
				}
				return
			}
			for i := range z {
				z[i] = s / y[i]
			}
		case ewMax:
			for i := range z {
				z[i] = maxNaN(s, y[i])
			}
		case ewMin:
			for i := range z {
				z[i] = minNaN(s, y[i])
			}
		}
	default:
		var v [1]T
		arith(op, x[:1], 1, y[:1], 1, v[:], isInt)
		for i := range z {
			z[i] = v[0]
		}
	}
}

// intDiv is x / y truncated toward zero, 0 when y is 0. (Called only for
// integer types: for floats x / 0 is ±Inf or NaN.)
func intDiv[T numElem](x, y T) T {
	if y == 0 {
		return 0
	}
	return x / y
}

// ewVariadic is the kernel of Max, Min, Sum and Mean: a fold of the binary
// op over the inputs, broadcast from opset 8 (Mean: Sum's, then divided).
type ewVariadic struct {
	op    ewOp
	name  string
	since int
	mean  bool
}

func newVariadic(op ewOp) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		if err := n.CheckArity(1, 1<<30, 1, 1); err != nil {
			return nil, err
		}
		for i := range n.Inputs {
			if !n.HasInput(i) {
				return nil, fmt.Errorf("input %d is left out: %s takes no optional inputs", i, n.Op)
			}
		}
		if n.Since < 6 {
			n.Attrs.Ignore("consumed_inputs")
		}
		return &ewVariadic{op: op, name: n.Op, since: n.Since, mean: n.Op == "Mean"}, nil
	}
}

func (k *ewVariadic) Infer(in []Meta) ([]Meta, error) {
	shapes := make([][]int, len(in))
	for i, m := range in {
		if m.Type != in[0].Type {
			return nil, fmt.Errorf("input %d is %v, input 0 %v: %s takes inputs of one type", i, m.Type, in[0].Type, k.name)
		}
		if k.since < 8 && !nd.SameShape(m.Shape, in[0].Shape) {
			return nil, fmt.Errorf("input %d has shape %s, input 0 %s: before opset 8 %s takes inputs of one shape",
				i, nd.ShapeString(m.Shape), nd.ShapeString(in[0].Shape), k.name)
		}
		shapes[i] = m.Shape
	}
	if !isNumeric(in[0].Type) {
		return nil, fmt.Errorf("%s of %v inputs: not a number type", k.name, in[0].Type)
	}
	if k.mean && !in[0].Type.IsFloat() {
		return nil, fmt.Errorf("%s of %v inputs: takes floats", k.name, in[0].Type)
	}
	out, err := BroadcastShapes(shapes...)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k *ewVariadic) Run(in, out []nd.Array) error {
	c := out[0]
	if len(in) == 1 {
		copy(c.Data, in[0].Data)
		return nil
	}
	if err := arithRun(k.name, k.op, newEWLoop(c.Shape, in[0].Shape, in[1].Shape), in[0], in[1], c); err != nil {
		return err
	}
	for _, b := range in[2:] {
		// c is read and written at the same index: in place is safe.
		if err := arithRun(k.name, k.op, newEWLoop(c.Shape, c.Shape, b.Shape), c, b, c); err != nil {
			return err
		}
	}
	if k.mean {
		f, err := floating[scaleLoop](k.name, c.Type)
		if err != nil {
			return err
		}
		f.scale(c, len(in))
	}
	return nil
}

type scaleLoop interface{ scale(x nd.Array, n int) }

func (floats[T]) scale(x nd.Array, n int) { scaleBy(nd.MustAs[T](x), T(n)) }

// scaleBy divides every element of x by n.
func scaleBy[T floatElem](x []T, n T) {
	parallel.For(len(x), 1, func(lo, hi int) {
		for i := range x[lo:hi] {
			x[lo+i] /= n
		}
	})
}

// powRun computes c = a^b over l. A float base takes an exponent of its
// own type as it is and any other converted to float64; an integer base
// takes integer exponents as int64s (square and multiply, wrapping) and
// float ones as float64s (math.Pow, truncated).
func powRun(name string, l *ewLoop, a, b, c nd.Array) error {
	var f powLoop
	var err error
	if a.Type.IsFloat() {
		f, err = floating[powLoop](name, a.Type)
	} else {
		f, err = integer[powLoop](name, a.Type)
	}
	if err != nil {
		return err
	}
	f.pow(l, a, b, c)
	return nil
}

type powLoop interface {
	pow(l *ewLoop, a, b, c nd.Array)
}

func (floats[T]) pow(l *ewLoop, a, b, c nd.Array) {
	if b.Type == a.Type {
		powFloats[T, T](l, a, b, c)
		return
	}
	powFloats[T, float64](l, a, castArray(b, nd.Float64), c)
}

func (ints[T]) pow(l *ewLoop, a, b, c nd.Array) { powInts[T](l, a, b, c) }

func powFloats[T, E floatElem](l *ewLoop, a, b, c nd.Array) {
	x, y, z := nd.MustAs[T](a), nd.MustAs[E](b), nd.MustAs[T](c)
	sx, sy := l.inner[0], l.inner[1]
	l.walk(16, func(o int, off []int, n int) {
		xs, ys, zs := ewSlice(x, off[0], sx, n), ewSlice(y, off[1], sy, n), z[o:o+n]
		switch {
		case sx == 0:
			for i := range zs {
				zs[i] = T(math.Pow(float64(xs[0]), float64(ys[i*sy])))
			}
		case sy == 0:
			powScalar(xs[:n], float64(ys[0]), zs)
		default:
			for i := range zs {
				zs[i] = T(math.Pow(float64(xs[i]), float64(ys[i])))
			}
		}
	})
}

// powScalar is z = x^e, the exponents that models use most computed
// without math.Pow (each as exact as math.Pow's result rounded to T).
func powScalar[T floatElem](x []T, e float64, z []T) {
	switch e {
	case 1:
		copy(z, x)
	case 2:
		for i, v := range x {
			z[i] = v * v
		}
	case -1:
		for i, v := range x {
			z[i] = 1 / v
		}
	case 0.5:
		for i, v := range x {
			// Pow(-Inf, 0.5) is +Inf and Pow(-0, 0.5) is +0, where Sqrt gives
			// NaN and -0.
			if v == T(math.Inf(-1)) {
				z[i] = T(math.Inf(1))
				continue
			}
			z[i] = T(math.Sqrt(float64(v))) + 0
		}
	default:
		for i, v := range x {
			z[i] = T(math.Pow(float64(v), e))
		}
	}
}

func powInts[T intElem](l *ewLoop, a, b, c nd.Array) {
	x, z := nd.MustAs[T](a), nd.MustAs[T](c)
	sx, sy := l.inner[0], l.inner[1]
	if b.Type.IsFloat() {
		y := nd.MustAs[float64](castArray(b, nd.Float64))
		l.walk(16, func(o int, off []int, n int) {
			xs, ys := ewSlice(x, off[0], sx, n), ewSlice(y, off[1], sy, n)
			for i := range z[o : o+n] {
				z[o+i] = T(truncI64(math.Pow(float64(xs[i*sx]), ys[i*sy])))
			}
		})
		return
	}
	y := nd.MustAs[int64](castArray(b, nd.Int64))
	l.walk(8, func(o int, off []int, n int) {
		xs, ys := ewSlice(x, off[0], sx, n), ewSlice(y, off[1], sy, n)
		for i := range z[o : o+n] {
			z[o+i] = T(ipow(int64(xs[i*sx]), ys[i*sy]))
		}
	})
}

// ipow is x^e in int64 arithmetic (wrapping); for e < 0, 1/x^-e truncated
// toward zero: 1 for x = 1, ±1 for x = -1, else 0 (0 too for x = 0, where
// NumPy refuses and C's pow gives Inf).
func ipow(x, e int64) int64 {
	if e < 0 {
		switch x {
		case 1:
			return 1
		case -1:
			if e&1 != 0 {
				return -1
			}
			return 1
		}
		return 0
	}
	r := int64(1)
	for e > 0 {
		if e&1 != 0 {
			r *= x
		}
		x *= x
		e >>= 1
	}
	return r
}
