package onnx

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The integer products of the quantized operators (QLinearConv,
// ConvInteger, QLinearMatMul, MatMulInteger) and their requantization.
//
// Where the CPU has AVX2 the products run on integer kernels
// (ops_quant_igemm.go, ops_quant_ubgemm.go) but for depthwise convolutions
// and MatMuls whose B differs per batch; those, and every product on other
// CPUs, run on package gemm's float32 kernels, exactly. A quantized
// value less its zero point is an integer of magnitude at most 255, held
// exactly as a float32; so is every sum of such products while it stays
// within 2^24, whatever order the kernel adds in. A product is cut along K
// into runs whose sums cannot leave that range: at most intProductK = 256
// steps (256 x 255 x 255 < 2^24) for operands known only when the node
// runs; for a constant B (the weights), packed once, runs as long as every
// column's sum of magnitudes times 255 stays within 2^24 (packInt), which
// for real weights is the whole of K. Each run is one float32 product;
// several are added in int32 (intGemm). So the sums are the integer
// product's to the bit, at the float kernels' speed (on AVX2 the integer
// kernels do 1.5 to 1.8 times as many multiply-adds a second).

// intProductK is the longest run of an intGemm product whose B is not
// packed: 256 steps of at most 255 x 255 sum to less than 2^24.
const intProductK = 256

// intExactL1 bounds the sum of magnitudes of a packed run's column of B:
// times 255 (the largest magnitude of A) it stays within 2^24.
const intExactL1 = (1 << 24) / 255

// intPacked is a constant B (k x n, integers held as float32s) packed for
// intGemm: one gemm.Packed per run of its rows, run c rows starts[c] to
// starts[c+1].
type intPacked struct {
	runs   []*gemm.Packed
	starts []int
}

// packInt packs op(B) (k x n; B's transpose, n x k, with transB) in runs
// of rows whose columns' sums of magnitudes stay within intExactL1 (at
// least 256 rows each: 256 x 255 is within it).
func packInt(transB bool, k, n int, b []float32, ldb int) *intPacked {
	at := func(p, j int) float32 {
		if transB {
			return b[j*ldb+p]
		}
		return b[p*ldb+j]
	}
	pk := &intPacked{starts: []int{0}}
	sum := make([]float32, n)
	for p := 0; p < k; p++ {
		over := false
		for j := range sum {
			v := at(p, j)
			if v < 0 {
				v = -v
			}
			sum[j] += v
			over = over || sum[j] > intExactL1
		}
		if over { // row p starts a run
			pk.starts = append(pk.starts, p)
			for j := range sum {
				sum[j] = max(at(p, j), -at(p, j))
			}
		}
	}
	pk.starts = append(pk.starts, k)
	for c := range len(pk.starts) - 1 {
		k0, kc := pk.starts[c], pk.starts[c+1]-pk.starts[c]
		if transB {
			pk.runs = append(pk.runs, gemm.Pack(true, kc, n, b[k0:], ldb))
		} else {
			pk.runs = append(pk.runs, gemm.Pack(false, kc, n, b[k0*ldb:], ldb))
		}
	}
	return pk
}

// intB is intGemm's B: k x n values at b (row stride ldb), or packed.
type intB struct {
	b      []float32
	ldb    int
	packed *intPacked
}

// intGemm computes the sums op(A) (m x k) x B (k x n), A and B integers of
// magnitude at most 255 held as float32s, exactly. op(A) is a (m x k, row
// stride lda), or with transA a's transpose (a k x m). tmp is scratch of m
// x n floats. When the product is one run and toAcc is false, the sums are
// left in tmp (exact integers, as float32s) and intGemm returns true;
// otherwise they go to acc (m x n, row stride ldc) as int32s.
func intGemm(transA bool, m, n, k int, a []float32, lda int, b intB, acc []int32, ldc int, tmp []float32, toAcc bool) (inTmp bool) {
	if m == 0 || n == 0 {
		return false
	}
	runs := (k + intProductK - 1) / intProductK
	if b.packed != nil {
		runs = len(b.packed.runs)
	}
	if k == 0 || runs == 0 {
		for i := range m {
			clear(acc[i*ldc : i*ldc+n])
		}
		return false
	}
	for c := range runs {
		k0, kc := c*intProductK, min(intProductK, k-c*intProductK)
		if b.packed != nil {
			k0, kc = b.packed.starts[c], b.packed.starts[c+1]-b.packed.starts[c]
		}
		ak := a[k0:]
		if transA {
			ak = a[k0*lda:]
		}
		if b.packed != nil {
			gemm.SgemmPacked(1, transA, m, 1, ak, lda, b.packed.runs[c], 0, n, 0, tmp, n)
		} else {
			gemm.SgemmWorkers(1, transA, false, m, n, kc, 1, ak, lda, b.b[k0*b.ldb:], b.ldb, 0, tmp, n)
		}
		if runs == 1 && !toAcc {
			return true
		}
		for i := range m {
			row, t := acc[i*ldc:i*ldc+n], tmp[i*n:i*n+n]
			if c == 0 {
				for j := range row {
					row[j] = int32(t[j])
				}
				continue
			}
			for j := range row {
				row[j] += int32(t[j])
			}
		}
	}
	return false
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
// as float32s, and packed for intGemm, made once: constant is set when the
// operand and its zero point are known before the run.
type shiftedCache struct {
	constant atomic.Bool
	p        atomic.Pointer[shiftedOperand]
}

// shiftedOperand is an operand less its zero point, and packed: one per
// group (a Conv's W), or one (a MatMul's B), or none; exact says that
// every sum of its products is exact in float32 in any order (no packing
// needed: the float kernels compute them).
type shiftedOperand struct {
	src    *byte
	v      []float32
	packed []*intPacked
	exact  bool
	ig     [][]int16 // the integer kernels' panels (igemm), one per group
	// or ubgemm's, one per group, and the sums of the operand's rows
	// (a Conv's W) or columns (a MatMul's B), less its zero points.
	ub   [][]byte
	sums []int32
}

// get returns x shifted by shift (into a new slice of x's length) and
// packed by pack (nil: not packed): kept when x is a constant.
func (c *shiftedCache) get(x nd.Array, shift func(dst []float32), pack func(v []float32) ([]*intPacked, bool)) *shiftedOperand {
	src := unsafe.SliceData(x.Data)
	if s := c.p.Load(); s != nil && s.src == src && s.v != nil {
		return s
	}
	s := &shiftedOperand{src: src, v: make([]float32, x.Len())}
	shift(s.v)
	if pack != nil {
		s.packed, s.exact = pack(s.v)
	}
	if c.constant.Load() {
		c.p.Store(s)
	}
	return s
}

// getPanels returns x's panels for the integer kernels (ig or ub set),
// made by pack: kept when x is a constant.
func (c *shiftedCache) getPanels(x nd.Array, pack func() *shiftedOperand) *shiftedOperand {
	src := unsafe.SliceData(x.Data)
	if s := c.p.Load(); s != nil && s.src == src && (s.ig != nil || s.ub != nil) {
		return s
	}
	s := pack()
	s.src = src
	if c.constant.Load() {
		c.p.Store(s)
	}
	return s
}

// intPool holds scratch buffers of int32s (a task's sums before they are
// requantized), as floatPool does float32s.
var intPool sync.Pool

// getInts returns a scratch buffer of n int32s (contents undefined);
// putInts gives it back.
func getInts(n int) *[]int32 {
	if b, ok := intPool.Get().(*[]int32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]int32, n)
	return &b
}

func putInts(b *[]int32) { intPool.Put(b) }

// isQuantType reports whether t is a type of quantized values.
func isQuantType(t nd.DType) bool { return t == nd.Int8 || t == nd.Uint8 }

// requant is a requantization of int32 sums to int8 or uint8 y:
// saturate(round(float32(sum + bias) x mult) + zp), the product in float32
// and rounded half to even, as ONNX Runtime's QLinearConv and
// QLinearMatMul compute it (MlasRequantizeOutput).
type requant struct {
	y    nd.Array
	mult []float32 // per output channel (a Conv's) or column (a MatMul's), or one
	bias []int32   // per output channel, or nil
	zp   int32
}

// roundMagic is 1.5 x 2^23: a float32 f of magnitude under 2^22 plus it
// is roundMagic plus f rounded to an integer, half to even (floats between
// 2^23 and 2^24 are the integers).
const roundMagic = 12582912

// sums are intGemm's: int32s, or float32s holding integers exactly.
type sums interface{ int32 | float32 }

// requantRow requantizes the sums s into y, with bias, and mult (mults nil)
// or mults[i] for s[i].
//
// The product plus roundMagic is rounded to an integer, half to even, in
// the units of 2^0 where it is under 2^22 in magnitude; it is then clamped
// to the type's range less zp (plus roundMagic): the same as rounding then
// clamping, since the bounds are integers, and beyond 2^22 the value is
// out of range anyway. The clamp is min and max (MINSS, no branches):
// saturation is frequent (a ReLU folded into the range sends every
// negative sum to the bound) and unpredictable, and branches on it cost
// more than the rest of the loop.
func requantRow[Y int8 | uint8, S sums](y []Y, s []S, bias int32, mult float32, mults []float32, zp int32) {
	qlo, qhi, _ := qRange(nd.TypeOf[Y]())
	lo, hi := float32(qlo-zp)+roundMagic, float32(qhi-zp)+roundMagic
	off := roundMagic - zp
	start := 0 // the vector kernel's (int32 sums): blocks of 32
	if si, ok := any(s).([]int32); ok {
		start = requantVec(y, si, bias, mult, mults, zp, qlo, qhi)
	}
	y, s = y[start:], s[start:]
	if mults != nil {
		mults = mults[start:]
	}
	// The sums as float32s: float32(s[i] + bias), one rounding as in
	// ONNX Runtime (float sums are exact integers: int32(a) is exact).
	if mults != nil {
		for i, a := range s {
			v := float32(a)
			if bias != 0 {
				v = float32(int32(a) + bias)
			}
			f := float32(v*mults[i]) + roundMagic
			y[i] = Y(int32(min(max(f, lo), hi)) - off)
		}
		return
	}
	if bias == 0 {
		for i, a := range s {
			f := float32(float32(a)*mult) + roundMagic
			y[i] = Y(int32(min(max(f, lo), hi)) - off)
		}
		return
	}
	for i, a := range s {
		f := float32(float32(int32(a)+bias)*mult) + roundMagic
		y[i] = Y(int32(min(max(f, lo), hi)) - off)
	}
}

// requantRows requantizes the sums s (rows x n, row-major: a MatMul's) into
// q.y's values from off (row stride n), each column j with its multiplier
// (q.mult[j], or q.mult[0] for all).
func requantRows[S sums](q *requant, s []S, rows, n, off int) {
	var mults []float32
	if len(q.mult) > 1 {
		mults = q.mult
	}
	for r := range rows {
		src := s[r*n : r*n+n]
		if q.y.Type == nd.Int8 {
			requantRow(nd.MustAs[int8](q.y)[off+r*n:off+r*n+n], src, 0, q.mult[0], mults, q.zp)
		} else {
			requantRow(nd.MustAs[uint8](q.y)[off+r*n:off+r*n+n], src, 0, q.mult[0], mults, q.zp)
		}
	}
}

// requantPlanes requantizes the sums s (n positions x m output channels,
// row-major: a Conv's patches^T x W^T) into q.y's planes: channel ch0+j's n
// values from off+j*ld, with its bias and multiplier.
func requantPlanes[S sums](q *requant, s []S, n, m, off, ld, ch0 int) {
	col := s[:n]
	if m > 1 {
		col = make([]S, n)
	}
	for j := range m {
		if m > 1 {
			for i := range col {
				col[i] = s[i*m+j]
			}
		}
		var bias int32
		if q.bias != nil {
			bias = q.bias[ch0+j]
		}
		mult := q.mult[min(ch0+j, len(q.mult)-1)]
		if q.y.Type == nd.Int8 {
			requantRow(nd.MustAs[int8](q.y)[off+j*ld:off+j*ld+n], col, bias, mult, nil, q.zp)
		} else {
			requantRow(nd.MustAs[uint8](q.y)[off+j*ld:off+j*ld+n], col, bias, mult, nil, q.zp)
		}
	}
}
