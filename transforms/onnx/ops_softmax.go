package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Softmax and LogSoftmax (opsets 1, 11, 13).
//
// Before opset 13 the input is coerced to a matrix at axis (default 1):
// the dimensions before axis are rows, those from axis on the columns that
// one softmax spans. From 13 the softmax runs along the one axis (default
// -1), every other dimension independent. Both subtract the maximum
// before exponentiating (so large inputs do not overflow) and sum the
// exponentials in float64; LogSoftmax is x - max - log(sum). A row holding
// NaN, or +Inf, or only -Inf gives NaN (as the definition computed in
// float64 does).

func init() {
	RegisterOp(OpDef{Name: "Softmax", Versions: []int{1, 11, 13}, New: newSoftmax(false)})
	RegisterOp(OpDef{Name: "LogSoftmax", Versions: []int{1, 11, 13}, New: newSoftmax(true)})
}

type softmaxKernel struct {
	name   string
	log    bool
	coerce bool // opset < 13: softmax over all dimensions from axis
	axis   int64
}

func newSoftmax(log bool) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		k := &softmaxKernel{name: n.Op, log: log, coerce: n.Since < 13}
		def := int64(-1)
		if k.coerce {
			def = 1
		}
		k.axis = n.Attrs.Int("axis", def)
		return k, n.CheckArity(1, 1, 1, 1)
	}
}

// split returns the rows, the length of one softmax and the stride between
// its values (the product of the dimensions after the axis, 1 when
// coerced).
func (k *softmaxKernel) split(shape []int) (outer, n, inner int, err error) {
	rank := len(shape)
	if k.coerce {
		// The 2-D coercion also defines axis = rank: softmaxes of one value.
		axis := int(k.axis)
		if axis < 0 {
			axis += rank
		}
		if axis < 0 || axis > rank {
			return 0, 0, 0, fmt.Errorf("axis %d is out of range for rank %d", k.axis, rank)
		}
		return numel(shape[:axis]), numel(shape[axis:]), 1, nil
	}
	axis, err := NormAxis(int(k.axis), rank)
	if err != nil {
		return 0, 0, 0, err
	}
	return numel(shape[:axis]), shape[axis], numel(shape[axis+1:]), nil
}

func (k *softmaxKernel) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	if !x.Type.IsFloat() {
		return nil, fmt.Errorf("%s of %v: takes a float type", k.name, x.Type)
	}
	if _, _, _, err := k.split(x.Shape); err != nil {
		return nil, err
	}
	return []Meta{{Type: x.Type, Shape: x.Shape}}, nil
}

func (k *softmaxKernel) Run(in, out []nd.Array) error {
	outer, n, inner, err := k.split(in[0].Shape)
	if err != nil {
		return err
	}
	f, err := floating[softmaxLoop](k.name, in[0].Type)
	if err != nil {
		return err
	}
	f.softmax(in[0], out[0], outer, n, inner, k.log)
	return nil
}

type softmaxLoop interface {
	softmax(x, y nd.Array, outer, n, inner int, log bool)
}

func (floats[T]) softmax(x, y nd.Array, outer, n, inner int, log bool) {
	softmax(nd.MustAs[T](x), nd.MustAs[T](y), outer, n, inner, log)
}

// softmax computes softmaxes of n values at stride inner, outer*inner of
// them.
func softmax[T floatElem](x, y []T, outer, n, inner int, log bool) {
	if len(x) == 0 {
		return
	}
	if inner == 1 {
		parallel.For(outer, 12*n, func(lo, hi int) {
			softmaxRows(x[lo*n:hi*n], y[lo*n:hi*n], n, log)
		})
		return
	}
	// Along a strided axis: each block of n x inner values is n rows; a
	// segment of columns is reduced row by row (contiguous reads).
	split := (inner + ewSegment - 1) / ewSegment
	seg := (inner + split - 1) / split
	parallel.For(outer*split, 12*n*seg, func(lo, hi int) {
		m := make([]T, seg)
		s := make([]float64, seg)
		for t := lo; t < hi; t++ {
			b, p := t/split, t%split
			j0, j1 := p*seg, min(inner, (p+1)*seg)
			xb, yb := x[b*n*inner:(b+1)*n*inner], y[b*n*inner:(b+1)*n*inner]
			softmaxCols(xb, yb, n, inner, j0, j1, m[:j1-j0], s[:j1-j0], log)
		}
	})
}

// softmaxRows computes the softmaxes of x's rows of n values, into y's:
// float32 rows (not the log form) many at a call of the vector kernel
// where there is one, each as softmaxRowF32 computes it.
func softmaxRows[T floatElem](x, y []T, n int, log bool) {
	if n == 0 {
		return
	}
	if x32, ok := asF32(x); ok && !log {
		y32, _ := asF32(y)
		for len(x32) >= n {
			done := softmaxRowsVec(x32, y32, n) * n
			x32, y32 = x32[done:], y32[done:]
			if len(x32) < n {
				return
			}
			softmaxRowF32(x32[:n], y32[:n]) // a row the kernel leaves: NaN or infinite
			x32, y32 = x32[n:], y32[n:]
		}
		return
	}
	for r := 0; r+n <= len(x); r += n {
		softmaxRow(x[r:r+n], y[r:r+n], log)
	}
}

// softmaxRow is the softmax of the contiguous x, into y.
func softmaxRow[T floatElem](x, y []T, log bool) {
	y = y[:len(x)]
	if x32, ok := asF32(x); ok && !log {
		y32, _ := asF32(y)
		softmaxRowF32(x32, y32)
		return
	}
	m := T(math.Inf(-1))
	for _, v := range x {
		m = maxNaN(m, v)
	}
	if x32, ok := any(x).([]float32); ok {
		expSubInto(any(y).([]float32), x32, float32(m))
	} else {
		for i, v := range x {
			y[i] = v - m
		}
		expInPlace(y)
	}
	sum := reduceRow[T, float64](redSum, y, 0)
	if log {
		ls := T(math.Log(sum))
		for i, v := range x {
			y[i] = (v - m) - ls
		}
		return
	}
	inv := T(1 / sum)
	for i := range y {
		y[i] *= inv
	}
}

// softmaxRowF32 is softmaxRow of float32s (not the log form), each loop
// on a vector kernel where there is one: the largest value (the same),
// expf of each value less it (the same bits), their sum in float64 (sum4:
// eight partial sums on the vector kernel), each value times the sum's
// inverse (the same bits).
func softmaxRowF32(x, y []float32) {
	m, i := maxVecF32(x)
	if i == 0 {
		m = float32(math.Inf(-1))
	}
	for _, v := range x[i:] {
		m = maxNaN(m, v)
	}
	expSubInto(y, x, m)
	inv := float32(1 / sum4(y))
	for i := scaleVecF32(y, inv, false); i < len(y); i++ {
		y[i] *= inv
	}
}

// softmaxCols computes the softmaxes of columns [j0, j1) of the n rows of
// x (rows of length inner), into y; m and s are scratch of j1-j0.
func softmaxCols[T floatElem](x, y []T, n, inner, j0, j1 int, m []T, s []float64, log bool) {
	for j := range m {
		m[j] = T(math.Inf(-1))
		s[j] = 0
	}
	for a := range n {
		for j, v := range x[a*inner+j0 : a*inner+j1] {
			m[j] = maxNaN(m[j], v)
		}
	}
	for a := range n {
		xr, yr := x[a*inner+j0:a*inner+j1], y[a*inner+j0:a*inner+j1]
		for j, v := range xr {
			yr[j] = v - m[j]
		}
		expInPlace(yr)
		for j, v := range yr {
			s[j] += float64(v)
		}
	}
	if log {
		for j := range s {
			s[j] = math.Log(s[j])
		}
		for a := range n {
			xr, yr := x[a*inner+j0:a*inner+j1], y[a*inner+j0:a*inner+j1]
			for j, v := range xr {
				yr[j] = (v - m[j]) - T(s[j])
			}
		}
		return
	}
	for j := range s {
		s[j] = 1 / s[j]
	}
	for a := range n {
		yr := y[a*inner+j0 : a*inner+j1]
		for j := range yr {
			yr[j] *= T(s[j])
		}
	}
}

// expInPlace replaces each value by its exponential (expf for float32).
func expInPlace[T floatElem](v []T) {
	switch s := any(v).(type) {
	case []float32:
		expSubInto(s, s, 0)
	case []float64:
		for i, x := range s {
			s[i] = math.Exp(x)
		}
	}
}
