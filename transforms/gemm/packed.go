package gemm

import (
	"fmt"
	"runtime"
)

// Packed is a k x n matrix op(B) stored as the micro-kernel reads it, so
// that products with it skip packing B. It pays where one B meets many A:
// the kNN reference set, packed once and multiplied by every batch of
// queries. It takes the space of B (plus columns up to a multiple of
// PanelWidth) and is read-only: goroutines may share it.
type Packed struct {
	k, n, np int // np: n rounded up to the kernel's panel width
	kern     *kernel
	kb       int // k block of the kernel for this k
	data     []float32
}

// PanelWidth is the column granularity of a Packed matrix on this machine
// (the micro-kernel's tile width: 32, 16 or 4): SgemmPacked's column range
// starts at a multiple of it.
func PanelWidth() int { return best().nr }

// PanelHeight is the row granularity of the products on this machine (the
// micro-kernel's tile height: 14 on AVX-512, 6 on AVX2, 4 in Go): a
// product's rows cut at multiples of it leave no tile computed for a few
// of its rows but at the product's end.
func PanelHeight() int { return best().mr }

// Pack packs op(B), k x n: B is k x n (element (p, j) at b[p*ldb+j]), or
// with transB n x k ((p, j) at b[j*ldb+p]). Bad arguments panic as in Sgemm.
func Pack(transB bool, k, n int, b []float32, ldb int) *Packed {
	return packWith(best(), transB, k, n, b, ldb)
}

func packWith(kern *kernel, transB bool, k, n int, b []float32, ldb int) *Packed {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("gemm: negative size k=%d n=%d", k, n))
	}
	if transB {
		checkMatrix("B", "n x k (transposed)", n, k, b, ldb, "ldb")
	} else {
		checkMatrix("B", "k x n", k, n, b, ldb, "ldb")
	}
	return new(Packed).pack(kern, transB, k, n, b, ldb)
}

// pack packs op(B) into pk, reusing its memory where it is large enough,
// and returns pk.
func (pk *Packed) pack(kern *kernel, transB bool, k, n int, b []float32, ldb int) *Packed {
	nr := kern.nr
	data := pk.data
	*pk = Packed{k: k, n: n, np: (n + nr - 1) / nr * nr, kern: kern}
	if k == 0 || n == 0 {
		return pk
	}
	pk.kb = kern.kBlock(k)
	if cap(data) >= k*pk.np {
		pk.data = data[:k*pk.np]
	} else {
		pk.data = aligned(k * pk.np)
	}
	for pc := 0; pc < k; pc += pk.kb {
		kc := min(pk.kb, k-pc)
		packB(pk.data[pc*pk.np:(pc+kc)*pk.np], b, ldb, transB, 0, n, pc, kc, nr)
	}
	return pk
}

// Rows and Cols are op(B)'s dimensions, k and n.
func (pk *Packed) Rows() int { return pk.k }

// Cols: see Rows.
func (pk *Packed) Cols() int { return pk.n }

// block returns the packed panels of steps pc..pc+kc (a k block) and columns
// jc..jc+nc (jc a multiple of the panel width).
func (pk *Packed) block(pc, kc, jc, nc int) []float32 {
	np := (nc + pk.kern.nr - 1) / pk.kern.nr * pk.kern.nr
	base := pc * pk.np
	return pk.data[base+jc*kc : base+(jc+np)*kc]
}

// SgemmPacked computes C = alpha·op(A)·B[:, j0:j1] + beta·C, C m x (j1-j0),
// where B is packed (op(A) and C as in Sgemm). j0 must be a multiple of
// PanelWidth(). The result is bitwise what Sgemm gives for the same
// operands, and the same whatever workers is (0: runtime.GOMAXPROCS(0)).
func SgemmPacked(workers int, transA bool, m int, alpha float32, a []float32, lda int, b *Packed, j0, j1 int, beta float32, c []float32, ldc int) {
	if j0 < 0 || j1 < j0 || j1 > b.n || j0%b.kern.nr != 0 {
		panic(fmt.Sprintf("gemm: columns %d..%d of a packed %dx%d matrix: want 0 <= j0 <= j1 <= %d, j0 a multiple of %d", j0, j1, b.k, b.n, b.n, b.kern.nr))
	}
	p := problem{transA: transA, m: m, n: j1 - j0, k: b.k, alpha: alpha, a: a, lda: lda, beta: beta, c: c, ldc: ldc, kern: b.kern.forRows(m), packed: b, j0: j0}
	p.check()
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p.run(workers)
}
