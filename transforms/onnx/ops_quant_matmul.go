package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// MatMulInteger and QLinearMatMul (opset 10): MatMul of int8 or uint8
// matrices less their zero points, summed in int32; QLinearMatMul then
// requantizes the sums to its output's type (requantize).
//
// The integer products are exact: where the CPU has AVX2 on the integer
// kernels (runUb, runInt: ops_quant_ubgemm.go, ops_quant_igemm.go), B
// packed once when it is a constant; else, and for a B that differs per
// batch, intGemm's (ops_quant_gemm.go), on package gemm's float32 kernels.
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
// inputs (QLinearMatMul's scales and its output's: params).
func (k *qmatmul) operands() (a, b, az, bz int) {
	if k.linear {
		return 0, 3, 2, 5
	}
	return 0, 1, 2, 3
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
	ia, ib, iaz, ibz := k.operands()
	const iyz = 7 // QLinearMatMul's y_zero_point
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
	_, ib, _, ibz := k.operands()
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
	ia, ib, iaz, ibz := k.operands()
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
	y := out[0]
	var rq *requant
	if k.linear {
		rq = &requant{y: y, mult: mult, zp: yz}
	}
	if igWidth > 0 && numel(s.bBatch) == 1 {
		k.runInt(s, a, b, zeroPoints(arrayAt(in, iaz)), zeroPoints(arrayAt(in, ibz)), y, rq)
		return nil
	}
	af := getFloats(a.Len())
	defer putFloats(af)
	shiftedInto(a, *af, zeroPoints(arrayAt(in, iaz)), numel(s.aBatch), s.m, s.k)
	bz := zeroPoints(arrayAt(in, ibz))
	var pack func([]float32) ([]*intPacked, bool)
	if numel(s.bBatch) == 1 { // one B for every product: packed
		pack = func(v []float32) ([]*intPacked, bool) { return []*intPacked{packInt(false, s.k, s.n, v, s.n)}, false }
	}
	bs := k.b.get(b, func(dst []float32) { shiftedInto(b, dst, bz, numel(s.bBatch)*s.k, s.n, 1) }, pack)
	ao, bo := s.batchOffsets()
	// Products of rows of A: chunks of rows for every core.
	rows := min(s.m, max(1, (1<<16)/max(1, s.n)))
	chunks := (s.m + rows - 1) / rows
	parallel.Each(len(ao)*chunks, 2*rows*s.n*s.k, func(t int) {
		bt, r0 := t/chunks, t%chunks*rows
		r1 := min(s.m, r0+rows)
		nr := r1 - r0
		o := (bt*s.m + r0) * s.n
		tmp := getFloats(nr * s.n)
		defer putFloats(tmp)
		bb := intB{b: bs.v[bo[bt]:], ldb: s.n}
		if bs.packed != nil {
			bb = intB{packed: bs.packed[0]}
		}
		a := (*af)[ao[bt]+r0*s.k:]
		if rq == nil {
			intGemm(false, nr, s.n, s.k, a, s.k, bb, nd.MustAs[int32](y)[o:], s.n, *tmp, true)
			return
		}
		acc := getInts(nr * s.n)
		defer putInts(acc)
		if intGemm(false, nr, s.n, s.k, a, s.k, bb, *acc, s.n, *tmp, false) {
			requantRows(rq, *tmp, nr, s.n, o)
		} else {
			requantRows(rq, *acc, nr, s.n, o)
		}
	})
	return nil
}

// runInt computes the product on the integer kernels (igemm): B (one for
// every product) less its zero points packed once where it is a constant,
// A's rows less theirs packed by each task, in chunks of rows; the sums go
// to y (MatMulInteger) or are requantized into it by the task that made
// them (rq: QLinearMatMul).
func (k *qmatmul) runInt(s mmShape, a, b nd.Array, az, bz []int32, y nd.Array, rq *requant) {
	bp := k.b.getPanels(b, func() *shiftedOperand { return packMatMulB(b, bz, s.k, s.n, len(az) <= 1) })
	ao, _ := s.batchOffsets()
	if bp.ub != nil && len(az) <= 1 {
		k.runUb(s, a, bp, zpAt(az, 0), y, rq)
		return
	}
	if bp.ig == nil { // packed for ubgemm, A's zero points per row: igemm's
		bp = &shiftedOperand{ig: [][]int16{igPackRows(b, bz, s.k, s.n)}}
	}
	pb := bp.ig[0]
	kp := igPairsOf(s.k)
	rows := min(s.m, max(igRows, (1<<16)/max(1, s.n)))
	rows = (rows + igRows - 1) / igRows * igRows
	chunks := (s.m + rows - 1) / rows
	parallel.Each(len(ao)*chunks, 2*rows*s.n*s.k, func(t int) {
		bt, r0 := t/chunks, t%chunks*rows
		r1 := min(s.m, r0+rows)
		nr := r1 - r0
		o := (bt*s.m + r0) * s.n
		pa := panels16.get(igASize(nr, s.k))
		defer panels16.put(pa)
		zr := az
		if len(az) > 1 {
			zr = az[r0:r1]
		}
		if a.Type == nd.Int8 {
			igPackA(*pa, nd.MustAs[int8](a)[ao[bt]+r0*s.k:], s.k, nr, s.k, zr)
		} else {
			igPackA(*pa, nd.MustAs[uint8](a)[ao[bt]+r0*s.k:], s.k, nr, s.k, zr)
		}
		if rq == nil {
			igemm(*pa, nr, pb, s.n, kp, nd.MustAs[int32](y)[o:], s.n)
			return
		}
		acc := getInts(nr * s.n)
		defer putInts(acc)
		igemm(*pa, nr, pb, s.n, kp, *acc, s.n)
		requantRows(rq, *acc, nr, s.n, o)
	})
}

// igPackRows packs b (k x n, int8 or uint8) less its zero points (one per
// column, or one in all) as igemm's B.
func igPackRows(b nd.Array, zp []int32, k, n int) []int16 {
	rows := make([]int16, k*n)
	if b.Type == nd.Int8 {
		shiftInt16(rows, nd.MustAs[int8](b), zp, k, n, 1)
	} else {
		shiftInt16(rows, nd.MustAs[uint8](b), zp, k, n, 1)
	}
	p := make([]int16, igBSize(k, n))
	igPackB(p, rows, n, k, n)
	return p
}

// packMatMulB packs B (k x n) less its zero points (one per column, or
// one in all) for ubgemm where ub (A's zero point per tensor) and its
// columns fit (ubFits), with its columns' sums, else for igemm.
func packMatMulB(b nd.Array, bz []int32, k, n int, ub bool) *shiftedOperand {
	v := func(p, j int) int32 {
		if b.Type == nd.Int8 {
			return int32(int8(b.Data[p*n+j])) - zpAt(bz, j)
		}
		return int32(b.Data[p*n+j]) - zpAt(bz, j)
	}
	for j := range n {
		if !ub || !ubFits(k, func(p int) int32 { return v(p, j) }) {
			return &shiftedOperand{ig: [][]int16{igPackRows(b, bz, k, n)}}
		}
	}
	op := &shiftedOperand{ub: [][]byte{make([]byte, ubBSize(k, n))}, sums: make([]int32, n)}
	ubPackB(op.ub[0], k, n, func(p, j int) byte { return byte(int8(v(p, j))) })
	for p := range k {
		for j := range n {
			op.sums[j] += v(p, j)
		}
	}
	return op
}

// runUb is runInt on ubgemm: A's raw values (int8 ones plus 128) by B's
// int8s less their zero points, the sums then less A's zero point times B's
// columns' sums (ubgemm's init).
func (k *qmatmul) runUb(s mmShape, a nd.Array, bp *shiftedOperand, az int32, y nd.Array, rq *requant) {
	flip := a.Type == nd.Int8
	if flip {
		az += 128
	}
	init := make([]int32, (s.n+ubCols-1)/ubCols*ubCols)
	for j, c := range bp.sums {
		init[j] = -az * c
	}
	ao, _ := s.batchOffsets()
	kq := ubQuadsOf(s.k)
	rows := min(s.m, max(ubRows, (1<<16)/max(1, s.n)))
	rows = (rows + ubRows - 1) / ubRows * ubRows
	chunks := (s.m + rows - 1) / rows
	parallel.Each(len(ao)*chunks, 2*rows*s.n*s.k, func(t int) {
		bt, r0 := t/chunks, t%chunks*rows
		r1 := min(s.m, r0+rows)
		nr := r1 - r0
		o := (bt*s.m + r0) * s.n
		pa := panels8.get(ubASize(nr, s.k))
		defer panels8.put(pa)
		ubPackARows(*pa, a.Data[ao[bt]+r0*s.k:], s.k, nr, s.k, flip)
		if rq == nil {
			ubgemm(*pa, nr, bp.ub[0], s.n, kq, nd.MustAs[int32](y)[o:], s.n, init, false)
			return
		}
		acc := getInts(nr * s.n)
		defer putInts(acc)
		ubgemm(*pa, nr, bp.ub[0], s.n, kq, *acc, s.n, init, false)
		requantRows(rq, *acc, nr, s.n, o)
	})
}
