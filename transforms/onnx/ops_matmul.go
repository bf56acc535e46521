package onnx

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// MatMul (opsets 1, 9, 13) and Gemm (opsets 1, 6, 7, 9, 11, 13): matrix
// products. MatMul has NumPy's semantics (a 1-D operand is a row or column
// vector whose axis goes from the result; batch axes broadcast); 1 takes
// floats, 9 integers too. Gemm is Y = alpha op(A) op(B) + beta C on 2-D
// A and B: C must be M x N before opset 7 unless broadcast=1, broadcasts
// unidirectionally from 7 and is optional from 11; 9 adds integers.
//
// Float32 products run on package gemm. A B that is a constant (weights)
// is packed once per node (gemm.Pack) and kept. MatMul with a B of no
// batch (or batch 1) multiplies all of A's rows at once; a batched one
// runs each product on one core, products spread over the cores, unless
// there are few large ones, which each use all cores. Other types are
// plain loops.

func init() {
	RegisterOp(OpDef{Name: "MatMul", Versions: []int{1, 9, 13}, New: newMatMul})
	RegisterOp(OpDef{Name: "Gemm", Versions: []int{1, 6, 7, 9, 11, 13}, New: newGemm})
}

// packedB keeps a constant B packed for gemm.
type packedB struct {
	constant atomic.Bool
	p        atomic.Pointer[packedFrom]
}

type packedFrom struct {
	src    *byte
	transB bool
	pk     *gemm.Packed
}

// get returns b (k x n as op(B); b is n x k if trans) packed: kept when b
// is a constant, packed for this call otherwise.
func (c *packedB) get(b nd.Array, trans bool, k, n int) *gemm.Packed {
	src := unsafe.SliceData(b.Data)
	if p := c.p.Load(); p != nil && p.src == src && p.transB == trans && p.pk.Rows() == k && p.pk.Cols() == n {
		return p.pk
	}
	ld := n
	if trans {
		ld = k
	}
	pk := gemm.Pack(trans, k, n, nd.MustAs[float32](b), max(ld, 1))
	if c.constant.Load() {
		c.p.Store(&packedFrom{src: src, transB: trans, pk: pk})
	}
	return pk
}

// checkMMType checks an operand's type for the op version: floats, and
// from opset 9 32- and 64-bit integers.
func checkMMType(op string, since int, t nd.DType) error {
	switch t {
	case nd.Float32, nd.Float64:
		return nil
	case nd.Int32, nd.Int64, nd.Uint32, nd.Uint64:
		if since >= 9 {
			return nil
		}
	}
	if since >= 9 {
		return fmt.Errorf("%s takes float32, float64 or 32- and 64-bit integers, not %v", op, t)
	}
	return fmt.Errorf("%s before opset 9 takes float32 or float64, not %v", op, t)
}

type matMul struct {
	since int
	b     packedB
	plans byShapes[*mmPlan] // the run's geometry, kept
}

// mmPlan is a product's geometry and, for a batch of products, the
// offsets of each one's A and B (batchOffsets).
type mmPlan struct {
	s      mmShape
	ao, bo []int
}

// plan returns the geometry of A times B, kept for the shapes.
func (k *matMul) plan(a, b []int) (*mmPlan, error) {
	return k.plans.get(func() (*mmPlan, error) {
		s, err := matMulShape(a, b)
		if err != nil {
			return nil, err
		}
		p := &mmPlan{s: s}
		if numel(s.bBatch) != 1 {
			p.ao, p.bo = s.batchOffsets()
		}
		return p, nil
	}, a, b)
}

func newMatMul(n *Node) (Kernel, error) {
	return &matMul{since: n.Since}, n.CheckArity(2, 2, 1, 1)
}

// mmShape is a MatMul's geometry: batch shape (broadcast), m, k, n, and
// the output shape.
type mmShape struct {
	batch   []int
	m, k, n int
	out     []int
	// aBatch, bBatch are A's and B's own batch shapes.
	aBatch, bBatch []int
}

func matMulShape(a, b []int) (mmShape, error) {
	var s mmShape
	if len(a) == 0 || len(b) == 0 {
		return s, fmt.Errorf("input A has shape %s, B %s: MatMul takes no scalars", nd.ShapeString(a), nd.ShapeString(b))
	}
	a2, b2 := a, b
	if len(a) == 1 {
		a2 = []int{1, a[0]}
	}
	if len(b) == 1 {
		b2 = []int{b[0], 1}
	}
	s.m, s.k = a2[len(a2)-2], a2[len(a2)-1]
	if kb := b2[len(b2)-2]; kb != s.k {
		return s, fmt.Errorf("input A has shape %s, B %s: A's %d columns and B's %d rows differ", nd.ShapeString(a), nd.ShapeString(b), s.k, kb)
	}
	s.n = b2[len(b2)-1]
	s.aBatch, s.bBatch = a2[:len(a2)-2], b2[:len(b2)-2]
	batch, err := BroadcastShapes(s.aBatch, s.bBatch)
	if err != nil {
		return s, fmt.Errorf("input A has shape %s, B %s: batch axes %s and %s cannot be broadcast", nd.ShapeString(a), nd.ShapeString(b), nd.ShapeString(s.aBatch), nd.ShapeString(s.bBatch))
	}
	s.batch = batch
	s.out = append([]int{}, batch...)
	if len(a) > 1 {
		s.out = append(s.out, s.m)
	}
	if len(b) > 1 {
		s.out = append(s.out, s.n)
	}
	return s, nil
}

func (k *matMul) Infer(in []Meta) ([]Meta, error) {
	a, b := in[0], in[1]
	if a.Type != b.Type {
		return nil, fmt.Errorf("input A is %v, B %v: want one type", a.Type, b.Type)
	}
	if err := checkMMType("MatMul", k.since, a.Type); err != nil {
		return nil, err
	}
	s, err := matMulShape(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	if b.Value != nil {
		k.b.constant.Store(true)
	}
	return []Meta{{Type: a.Type, Shape: s.out}}, nil
}

func (k *matMul) Run(in, out []nd.Array) error {
	a, b, y := in[0], in[1], out[0]
	mp, err := k.plan(a.Shape, b.Shape)
	if err != nil {
		return err
	}
	s := mp.s
	if a.Type == nd.Float32 { // packed products (transforms/gemm)
		k.runF32(mp, a, b, y)
		return nil
	}
	f, err := numeric[matMulLoops]("MatMul", a.Type)
	if err != nil {
		return err
	}
	f.matMul(s, a, b, y)
	return nil
}

// matMulLoops are the loops of MatMul and Gemm for the types other than
// float32 (those checkMMType lets through).
type matMulLoops interface {
	matMul(s mmShape, a, b, y nd.Array)
	gemm(g *gemmOp, a, b, c, y nd.Array, m, k, n int)
}

func (numbers[T, W]) matMul(s mmShape, a, b, y nd.Array) {
	matMulLoop(s, nd.MustAs[T](a), nd.MustAs[T](b), nd.MustAs[T](y))
}

func (numbers[T, W]) gemm(g *gemmOp, a, b, c, y nd.Array, m, k, n int) {
	gemmLoop(g, a, b, c, y, m, k, n, nd.MustAs[T])
}

// batchOffsets returns, for each of the broadcast batch's products, the
// offsets of its A and B matrices (in elements).
func (s mmShape) batchOffsets() (ao, bo []int) {
	nb := numel(s.batch)
	ao, bo = make([]int, nb), make([]int, nb)
	as := BroadcastStrides(s.aBatch, s.batch)
	bs := BroadcastStrides(s.bBatch, s.batch)
	idx := make([]int, len(s.batch))
	for t := range nb {
		o1, o2 := 0, 0
		for d, i := range idx {
			o1 += i * as[d]
			o2 += i * bs[d]
		}
		ao[t], bo[t] = o1*s.m*s.k, o2*s.k*s.n
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < s.batch[d] {
				break
			}
			idx[d] = 0
		}
	}
	return ao, bo
}

func (k *matMul) runF32(mp *mmPlan, a, b, y nd.Array) {
	s := mp.s
	as, bs, ys := nd.MustAs[float32](a), nd.MustAs[float32](b), nd.MustAs[float32](y)
	if s.m == 0 || s.n == 0 {
		return
	}
	if s.k == 0 {
		clear(ys)
		return
	}
	nb := numel(s.batch)
	if numel(s.bBatch) == 1 {
		// One B for every product (its batch axes, if any, all 1: the
		// output's batch is A's): all of A's rows times B at once.
		rows := nb * s.m
		if k.b.constant.Load() {
			pk := k.b.get(b, false, s.k, s.n)
			gemm.SgemmPacked(0, false, rows, 1, as, s.k, pk, 0, s.n, 0, ys, s.n)
			return
		}
		gemm.Sgemm(false, false, rows, s.n, s.k, 1, as, s.k, bs, s.n, 0, ys, s.n)
		return
	}
	r := batchRun{mp: mp, a: as, b: bs, y: ys, workers: 1}
	if flops := s.m * s.n * s.k; flops >= 1<<22 && nb < 2*runtime.GOMAXPROCS(0) {
		r.workers = 0
		for t := range nb {
			r.one(t)
		}
		return
	}
	parallel.EachWith(nb, s.m*s.n*s.k, r, (*batchRun).one)
}

// batchRun is a batch of products (runF32's), each on workers goroutines
// (0: all).
type batchRun struct {
	mp      *mmPlan
	a, b, y []float32
	workers int
}

// one computes product t.
func (r *batchRun) one(t int) {
	s := r.mp.s
	gemm.SgemmWorkers(r.workers, false, false, s.m, s.n, s.k, 1, r.a[r.mp.ao[t]:], s.k, r.b[r.mp.bo[t]:], s.n, 0, r.y[t*s.m*s.n:], s.n)
}

// matMulLoop is MatMul by plain loops (other types than float32).
func matMulLoop[T numElem](s mmShape, a, b, y []T) {
	ao, bo := s.batchOffsets()
	m, n, k := s.m, s.n, s.k
	parallel.For(len(ao)*m, n*k, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			t, i := r/m, r%m
			row := y[r*n : (r+1)*n]
			clear(row)
			ar := a[ao[t]+i*k : ao[t]+(i+1)*k]
			for p, av := range ar {
				br := b[bo[t]+p*n : bo[t]+(p+1)*n]
				for j := range row {
					row[j] += av * br[j]
				}
			}
		}
	})
}

// gemmOp is Gemm.
type gemmOp struct {
	since          int
	alpha, beta    float32
	transA, transB bool
	broadcast      bool // opsets 1 and 6: C broadcasts only if set
	b              packedB
}

func newGemm(n *Node) (Kernel, error) {
	minIn := 3
	if n.Since >= 11 {
		minIn = 2
	}
	if err := n.CheckArity(minIn, 3, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	g := &gemmOp{since: n.Since, alpha: a.Float("alpha", 1), beta: a.Float("beta", 1)}
	g.transA, g.transB = a.Flag("transA", false), a.Flag("transB", false)
	if n.Since < 7 {
		g.broadcast = a.Flag("broadcast", false)
	} else {
		g.broadcast = true
	}
	return g, a.Err()
}

// shape returns m, k, n from A's and B's shapes, and checks C's.
func (g *gemmOp) shape(a, b, c []int, hasC bool) (m, k, n int, err error) {
	if len(a) != 2 || len(b) != 2 {
		return 0, 0, 0, fmt.Errorf("input A has shape %s, B %s: Gemm takes 2-D A and B", nd.ShapeString(a), nd.ShapeString(b))
	}
	m, k = a[0], a[1]
	if g.transA {
		m, k = k, m
	}
	kb, n := b[0], b[1]
	if g.transB {
		kb, n = n, kb
	}
	if kb != k {
		return 0, 0, 0, fmt.Errorf("input A has shape %s (transA=%t), B %s (transB=%t): the inner dimensions %d and %d differ",
			nd.ShapeString(a), g.transA, nd.ShapeString(b), g.transB, k, kb)
	}
	if !hasC {
		return m, k, n, nil
	}
	if !g.broadcast {
		if !nd.SameShape(c, []int{m, n}) {
			return 0, 0, 0, fmt.Errorf("input C has shape %s, want [%dx%d]: before opset 7, C broadcasts only with broadcast=1", nd.ShapeString(c), m, n)
		}
		return m, k, n, nil
	}
	if !unidirectional(c, []int{m, n}) {
		return 0, 0, 0, fmt.Errorf("input C has shape %s, which does not broadcast to [%dx%d]", nd.ShapeString(c), m, n)
	}
	return m, k, n, nil
}

func (g *gemmOp) Infer(in []Meta) ([]Meta, error) {
	a, b, c := in[0], in[1], metaAt(in, 2)
	if a.Type != b.Type || (c.Type != nd.Undefined && c.Type != a.Type) {
		return nil, sameTypeErr([]string{"A", "B", "C"}, a, b, c)
	}
	if err := checkMMType("Gemm", g.since, a.Type); err != nil {
		return nil, err
	}
	m, _, n, err := g.shape(a.Shape, b.Shape, c.Shape, c.Type != nd.Undefined)
	if err != nil {
		return nil, err
	}
	if b.Value != nil {
		g.b.constant.Store(true)
	}
	return []Meta{{Type: a.Type, Shape: []int{m, n}}}, nil
}

func (g *gemmOp) Run(in, out []nd.Array) error {
	a, b, c, y := in[0], in[1], arrayAt(in, 2), out[0]
	hasC := c.Type != nd.Undefined
	m, k, n, err := g.shape(a.Shape, b.Shape, c.Shape, hasC)
	if err != nil {
		return err
	}
	if a.Type == nd.Float32 { // packed products (transforms/gemm)
		g.runF32(a, b, c, y, m, k, n)
		return nil
	}
	f, err := numeric[matMulLoops]("Gemm", a.Type)
	if err != nil {
		return err
	}
	f.gemm(g, a, b, c, y, m, k, n)
	return nil
}

// fillC writes beta*C broadcast to m x n into y; false when there is
// nothing to add (no C, or beta 0).
func fillC[T numElem](y, c []T, cShape []int, m, n int, beta float64) bool {
	if c == nil || beta == 0 {
		return false
	}
	rows, cols := 1, 1
	switch len(cShape) {
	case 2:
		rows, cols = cShape[0], cShape[1]
	case 1:
		cols = cShape[0]
	}
	for i := range m {
		row := y[i*n : (i+1)*n]
		cr := c[min(i, rows-1)*cols:]
		if cols == 1 {
			for j := range row {
				row[j] = cr[0]
			}
		} else {
			copy(row, cr[:n])
		}
		if beta != 1 {
			for j, v := range row {
				row[j] = T(float64(v) * beta)
			}
		}
	}
	return true
}

func (g *gemmOp) runF32(a, b, c, y nd.Array, m, k, n int) {
	as, ys := nd.MustAs[float32](a), nd.MustAs[float32](y)
	beta := float32(0)
	if fillC(ys, asOr[float32](c), c.Shape, m, n, float64(g.beta)) {
		beta = 1
	}
	if m == 0 || n == 0 {
		return
	}
	lda := k
	if g.transA {
		lda = m
	}
	if k == 0 {
		if beta == 0 {
			clear(ys)
		}
		return
	}
	if m == 1 && g.transB && gemvT(ys, as[:k], nd.MustAs[float32](b), g.alpha, beta) {
		return
	}
	if g.b.constant.Load() {
		pk := g.b.get(b, g.transB, k, n)
		gemm.SgemmPacked(0, g.transA, m, g.alpha, as, lda, pk, 0, n, beta, ys, n)
		return
	}
	ldb := n
	if g.transB {
		ldb = k
	}
	gemm.Sgemm(g.transA, g.transB, m, n, k, g.alpha, as, lda, nd.MustAs[float32](b), ldb, beta, ys, n)
}

// gemvT computes y (1 x n) = alpha * x · W^T + beta * y for one row x (k
// floats) and W (n x k, row-major: a classifier's weights as Gemm's
// transB takes them), one dot product a row of W (dotRowsVec), W read once
// in its order, and reports whether it did (false: no vector kernel, or k
// under 16). A network's classifier at batch 1: the packed product read its
// weights (8 MB for ResNet-50's 2048 -> 1000, long out of the caches after
// the convolutions' 90 MB) at 7 GB/s, half ONNX Runtime's rate. Measured
// at one thread (fastest of 40 runs a step, alternating binaries, two
// pairs): ResNet-50 at batch 1, its Gemm 0.90 -> 0.56 ms (ONNX Runtime's
// profiler 0.58); mobilenet_v3_small at batch 1, its two 0.21 -> 0.15 and
// 0.12 -> 0.10 (0.17 and 0.10); at two threads 0.50 -> 0.35, 0.10 -> 0.09
// and 0.06 -> 0.05.
func gemvT(y, x, w []float32, alpha, beta float32) bool {
	k, n := len(x), len(y)
	if k < 16 || n == 0 || simdWidth < 16 {
		return false
	}
	parallel.ForWith(n, 2*k, gemvRun{y: y, x: x, w: w, alpha: alpha, beta: beta}, (*gemvRun).rows)
	return true
}

// gemvRun is gemvT's arguments.
type gemvRun struct {
	y, x, w     []float32
	alpha, beta float32
}

// rows computes y[lo:hi].
func (r *gemvRun) rows(lo, hi int) {
	k := len(r.x)
	k16 := k &^ 15
	var buf [64]float32 // the dot products, 64 rows at a time
	for j0 := lo; j0 < hi; j0 += len(buf) {
		d := buf[:min(len(buf), hi-j0)]
		dotRowsVec(d, r.w[j0*k:], k, r.x)
		for i := range d {
			row := r.w[(j0+i)*k:][:k]
			s := d[i]
			for p := k16; p < k; p++ {
				s += row[p] * r.x[p]
			}
			v := r.alpha * s
			if r.beta != 0 {
				v += r.beta * r.y[j0+i]
			}
			r.y[j0+i] = v
		}
	}
}

// gemmLoop is Gemm by plain loops (other types than float32): the product
// summed in T, then alpha and beta applied in float64.
func gemmLoop[T numElem](g *gemmOp, a, b, c, y nd.Array, m, k, n int, as func(nd.Array) []T) {
	av, bv, yv := as(a), as(b), as(y)
	var cv []T
	if c.Type != nd.Undefined {
		cv = as(c)
	}
	hasC := fillC(yv, cv, c.Shape, m, n, float64(g.beta))
	alpha := float64(g.alpha)
	parallel.For(m, n*k, func(lo, hi int) {
		acc := make([]T, n)
		for i := lo; i < hi; i++ {
			clear(acc)
			for p := range k {
				var x T
				if g.transA {
					x = av[p*m+i]
				} else {
					x = av[i*k+p]
				}
				if g.transB {
					for j := range acc {
						acc[j] += x * bv[j*k+p]
					}
				} else {
					br := bv[p*n : (p+1)*n]
					for j := range acc {
						acc[j] += x * br[j]
					}
				}
			}
			row := yv[i*n : (i+1)*n]
			for j, v := range acc {
				r := v
				if alpha != 1 {
					r = T(float64(v) * alpha)
				}
				if hasC {
					r += row[j]
				}
				row[j] = r
			}
		}
	})
}
