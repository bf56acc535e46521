package onnx

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// MatMulInteger and QLinearMatMul (opset 10): MatMul of int8 or uint8
// matrices less their zero points, summed in int32; QLinearMatMul then
// requantizes the sums to its output's type (requantize).
//
// The integer products run on package gemm's float32 kernels, exactly: a
// value less its zero point is an integer of magnitude at most 255, so a
// product of two is at most 65025 and a sum of up to intProductK = 256 of
// them stays under 2^24, where every float32 sum of integers is exact
// whatever its order. Longer sums are cut into runs of 256 terms, each a
// float32 product, added in int32 (intGemm). So the result is the integer
// product's to the bit, at the speed of the float kernels (the vector
// units of this runtime's CPUs multiply floats as fast as the 32-bit
// integers an int32 product would need).
//
// MatMulInteger's a_zero_point is per tensor or one per row of A (M
// values), b_zero_point per tensor or one per column of B (N values).
// QLinearMatMul's scales and zero points are per tensor, but for b's
// (per tensor or per column, as ONNX Runtime takes them); its output is
// saturate(round(sum x (a_scale x b_scale / y_scale)) + y_zero_point),
// the multiplier in float32 in that order and the rounding half to even,
// as ONNX Runtime computes it.

func init() {
	RegisterOp(OpDef{Name: "MatMulInteger", Versions: []int{10}, New: newMatMulInteger})
	RegisterOp(OpDef{Name: "QLinearMatMul", Versions: []int{10}, New: newQLinearMatMul})
}

// intProductK is the most terms of an integer product that one float32
// product sums exactly (256 x 255 x 255 < 2^24).
const intProductK = 256

// intGemm computes acc (m x n, row stride ldc) = a (m x k, row stride lda)
// x b (k x n, row stride ldb), a and b integers of magnitude at most 255
// held as float32s, exactly; tmp is scratch of m x n floats. workers is
// gemm.SgemmWorkers'.
func intGemm(workers, m, n, k int, a []float32, lda int, b []float32, ldb int, acc []int32, ldc int, tmp []float32) {
	if m == 0 || n == 0 {
		return
	}
	for i := range m {
		clear(acc[i*ldc : i*ldc+n])
	}
	for k0 := 0; k0 < k; k0 += intProductK {
		kc := min(intProductK, k-k0)
		gemm.SgemmWorkers(workers, false, false, m, n, kc, 1, a[k0:], lda, b[k0*ldb:], ldb, 0, tmp, n)
		for i := range m {
			row, t := acc[i*ldc:i*ldc+n], tmp[i*n:i*n+n]
			for j := range row {
				row[j] += int32(t[j])
			}
		}
	}
}

// toShifted writes x less its zero point as float32s into dst, x's values
// in outer x n x inner order with zp one per index of the middle axis (or
// one in all).
func toShifted[X int8 | uint8](x []X, dst []float32, zp []int32, outer, n, inner int) {
	if len(zp) <= 1 {
		var z int32
		if len(zp) == 1 {
			z = zp[0]
		}
		for i, v := range x {
			dst[i] = float32(int32(v) - z)
		}
		return
	}
	i := 0
	for range outer {
		for c := range n {
			z := zp[c]
			for j := range inner {
				dst[i+j] = float32(int32(x[i+j]) - z)
			}
			i += inner
		}
	}
}

// shiftedInto is toShifted for an int8 or uint8 array.
func shiftedInto(x nd.Array, dst []float32, zp []int32, outer, n, inner int) {
	if x.Type == nd.Int8 {
		toShifted(nd.MustAs[int8](x), dst, zp, outer, n, inner)
	} else {
		toShifted(nd.MustAs[uint8](x), dst, zp, outer, n, inner)
	}
}

// shiftedCache keeps a constant operand (the weights) less its zero point
// as float32s, made once: constant is set by Infer when the operand and its
// zero point are known before the run.
type shiftedCache struct {
	constant atomic.Bool
	p        atomic.Pointer[shiftedOperand]
}

type shiftedOperand struct {
	src *byte
	v   []float32
}

// get returns x shifted by make (into a new slice of x's length): kept
// when x is a constant.
func (c *shiftedCache) get(x nd.Array, make func(dst []float32)) []float32 {
	src := unsafe.SliceData(x.Data)
	if s := c.p.Load(); s != nil && s.src == src {
		return s.v
	}
	v := newFloats(x.Len())
	make(v)
	if c.constant.Load() {
		c.p.Store(&shiftedOperand{src: src, v: v})
	}
	return v
}

func newFloats(n int) []float32 { return make([]float32, n) }

// isQuantType reports whether t is a type of quantized values.
func isQuantType(t nd.DType) bool { return t == nd.Int8 || t == nd.Uint8 }

// requantize writes y = saturate(round(float32(acc) x mult) + zp) for a
// run of values sharing mult, rounding half to even.
func requantize[Y int8 | uint8](y []Y, acc []int32, mult float32, zp int32) {
	lo, hi, _ := qRange(nd.TypeOf[Y]())
	for i, a := range acc {
		r := math.RoundToEven(float64(float32(a)*mult)) + float64(zp)
		y[i] = Y(min(float64(hi), max(float64(lo), r)))
	}
}

// requantizeInto is requantize for an int8 or uint8 array's values [lo, hi).
func requantizeInto(y nd.Array, lo, hi int, acc []int32, mult float32, zp int32) {
	if y.Type == nd.Int8 {
		requantize(nd.MustAs[int8](y)[lo:hi], acc, mult, zp)
	} else {
		requantize(nd.MustAs[uint8](y)[lo:hi], acc, mult, zp)
	}
}

// qmatmul is MatMulInteger (linear false) and QLinearMatMul.
type qmatmul struct {
	linear bool
	b      shiftedCache
}

func newMatMulInteger(n *Node) (Kernel, error) {
	return &qmatmul{}, n.CheckArity(2, 4, 1, 1)
}

func newQLinearMatMul(n *Node) (Kernel, error) {
	return &qmatmul{linear: true}, n.CheckArity(8, 8, 1, 1)
}

// operands returns the indices of A, B and their zero points among the
// inputs, and of the scales (-1 for MatMulInteger).
func (k *qmatmul) operands() (a, b, az, bz, as, bs, ys, yz int) {
	if k.linear {
		return 0, 3, 2, 5, 1, 4, 6, 7
	}
	return 0, 1, 2, 3, -1, -1, -1, -1
}

// qInput names a quantized input's scale and zero point and gives their
// indices, the index of the values they quantize (on) and their per-axis
// length (-1: per tensor only).
type qInput struct {
	s, z       string
	is, iz, on int
	n          int
}

// params are QLinearMatMul's three quantizations, b's per column of n.
func (k *qmatmul) params(n int) []qInput {
	return []qInput{{"a_scale", "a_zero_point", 1, 2, 0, -1}, {"b_scale", "b_zero_point", 4, 5, 3, n}, {"y_scale", "y_zero_point", 6, 7, 7, -1}}
}

func (k *qmatmul) geometry(in []Meta) (mmShape, nd.DType, error) {
	ia, ib, iaz, ibz, _, _, _, iyz := k.operands()
	a, b := in[ia], in[ib]
	if !isQuantType(a.Type) || !isQuantType(b.Type) {
		return mmShape{}, 0, fmt.Errorf("inputs A and B are %v and %v: want int8 or uint8", a.Type, b.Type)
	}
	s, err := matMulShape(a.Shape, b.Shape)
	if err != nil {
		return s, 0, err
	}
	if !k.linear {
		if err := checkQShape("a_scale", "a_zero_point", Meta{}, metaAt(in, iaz), s.m, a.Type); err != nil {
			return s, 0, err
		}
		err := checkQShape("b_scale", "b_zero_point", Meta{}, metaAt(in, ibz), s.n, b.Type)
		return s, nd.Int32, err
	}
	if yt := metaAt(in, iyz).Type; !isQuantType(yt) {
		return s, 0, fmt.Errorf("input y_zero_point is %v: want int8 or uint8 (the output's type)", yt)
	}
	for _, c := range k.params(s.n) {
		if err := checkQShape(c.s, c.z, in[c.is], in[c.iz], c.n, in[c.on].Type); err != nil {
			return s, 0, err
		}
	}
	return s, in[iyz].Type, nil
}

func (k *qmatmul) Infer(in []Meta) ([]Meta, error) {
	s, t, err := k.geometry(in)
	if err != nil {
		return nil, err
	}
	if err := k.checkConsts(in); err != nil {
		return nil, err
	}
	_, ib, _, ibz, _, _, _, _ := k.operands()
	if in[ib].Value != nil && (!metaAt(in, ibz).Type.IsInt() || metaAt(in, ibz).Value != nil) {
		k.b.constant.Store(true)
	}
	return []Meta{{Type: t, Shape: s.out}}, nil
}

func (k *qmatmul) checkConsts(in []Meta) error {
	if !k.linear {
		return nil
	}
	for _, c := range k.params(-1) {
		if err := checkQValues(c.s, c.z, metaAt(in, c.is), metaAt(in, c.iz)); err != nil {
			return err
		}
	}
	return nil
}

// zeroPoints reads a zero point input (nil when left out).
func zeroPoints(a nd.Array) []int32 {
	if a.Type == nd.Undefined {
		return nil
	}
	v, _ := nd.Int64s(a)
	z := make([]int32, len(v))
	for i, x := range v {
		z[i] = int32(x)
	}
	return z
}

func (k *qmatmul) Run(in, out []nd.Array) error {
	metas := make([]Meta, len(in))
	for i, a := range in {
		metas[i] = Meta{Type: a.Type, Shape: a.Shape}
	}
	s, _, err := k.geometry(metas)
	if err != nil {
		return err
	}
	ia, ib, iaz, ibz, _, _, _, _ := k.operands()
	var mult []float32
	var yz int32
	if k.linear {
		var q [3]qParams
		for i, c := range k.params(s.n) {
			if q[i], err = readQParams(c.s, c.z, in[c.is], in[c.iz]); err != nil {
				return err
			}
		}
		mult = make([]float32, len(q[1].scale))
		for j, bs := range q[1].scale {
			mult[j] = q[0].scale[0] * bs / q[2].scale[0]
		}
		yz = q[2].zero(0)
	}
	a, b := in[ia], in[ib]
	if s.m == 0 || s.n == 0 {
		return nil
	}
	af := getFloats(a.Len())
	defer putFloats(af)
	shiftedInto(a, *af, zeroPoints(arrayAt(in, iaz)), numel(s.aBatch), s.m, s.k)
	bz := zeroPoints(arrayAt(in, ibz))
	bf := k.b.get(b, func(dst []float32) { shiftedInto(b, dst, bz, numel(s.bBatch)*s.k, s.n, 1) })
	ao, bo := s.batchOffsets()
	y := out[0]
	var acc []int32
	if k.linear {
		acc = make([]int32, numel(s.batch)*s.m*s.n)
	} else {
		acc = nd.MustAs[int32](y)
	}
	// Products of rows of A: chunks of rows for every core.
	rows := min(s.m, max(1, (1<<16)/max(1, s.n)))
	chunks := (s.m + rows - 1) / rows
	parallel.Each(len(ao)*chunks, 2*rows*s.n*s.k, func(t int) {
		bt, r0 := t/chunks, t%chunks*rows
		r1 := min(s.m, r0+rows)
		tmp := getFloats((r1 - r0) * s.n)
		defer putFloats(tmp)
		o := (bt*s.m + r0) * s.n
		intGemm(1, r1-r0, s.n, s.k, (*af)[ao[bt]+r0*s.k:], s.k, bf[bo[bt]:], s.n, acc[o:], s.n, *tmp)
		if !k.linear {
			return
		}
		for r := range r1 - r0 {
			row := o + r*s.n
			if len(mult) == 1 {
				requantizeInto(y, row, row+s.n, acc[row:row+s.n], mult[0], yz)
				continue
			}
			for j := range s.n {
				requantizeInto(y, row+j, row+j+1, acc[row+j:row+j+1], mult[j], yz)
			}
		}
	})
	return nil
}
