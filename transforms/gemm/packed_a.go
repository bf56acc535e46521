package gemm

import (
	"fmt"
	"runtime"
)

// PackedA is an m x k matrix op(A) stored as the micro-kernel reads it, so
// that products with it skip packing A: a convolution's weights times each
// image's patches, packed once per model instead of once per product. It
// takes the space of A (plus rows up to a multiple of the kernel's tile
// height) and is read-only: goroutines may share it.
type PackedA struct {
	m, k, mp int // mp: m rounded up to the kernel's tile height
	kern     *kernel
	kb       int // k block of the kernel for this k
	data     []float32
}

// PackA packs op(A), m x k: A is m x k (element (i, p) at a[i*lda+p]), or
// with transA k x m ((i, p) at a[p*lda+i]). Bad arguments panic as in
// Sgemm.
func PackA(transA bool, m, k int, a []float32, lda int) *PackedA {
	return packAWith(best(), transA, m, k, a, lda)
}

func packAWith(kern *kernel, transA bool, m, k int, a []float32, lda int) *PackedA {
	if m < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative size m=%d k=%d", m, k))
	}
	if transA {
		checkMatrix("A", "k x m (transposed)", k, m, a, lda, "lda")
	} else {
		checkMatrix("A", "m x k", m, k, a, lda, "lda")
	}
	return new(PackedA).pack(kern, transA, m, k, a, lda)
}

// pack packs op(A) into pk, reusing its storage where it is large enough
// (a run's A shared by its column blocks, pooled), and returns pk.
func (pk *PackedA) pack(kern *kernel, transA bool, m, k int, a []float32, lda int) *PackedA {
	mr := kern.mr
	data := pk.data
	*pk = PackedA{m: m, k: k, mp: roundUp(m, mr), kern: kern}
	if m == 0 || k == 0 {
		return pk
	}
	pk.kb = kern.kBlock(k)
	if cap(data) >= k*pk.mp {
		pk.data = data[:k*pk.mp]
	} else {
		pk.data = aligned(k * pk.mp)
	}
	for pc := 0; pc < k; pc += pk.kb {
		kc := min(pk.kb, k-pc)
		packA(pk.data[pc*pk.mp:(pc+kc)*pk.mp], a, lda, transA, 0, m, pc, kc, mr)
	}
	return pk
}

// Rows and Cols are op(A)'s dimensions, m and k.
func (pk *PackedA) Rows() int { return pk.m }

// Cols: see Rows.
func (pk *PackedA) Cols() int { return pk.k }

// block returns the packed panels of steps pc..pc+kc (a k block) and rows
// ic..ic+mc (ic a multiple of the tile height), as packA writes them.
func (pk *PackedA) block(pc, kc, ic, mc int) []float32 {
	base := pc * pk.mp
	return pk.data[base+ic*kc : base+(ic+roundUp(mc, pk.kern.mr))*kc]
}

// SgemmPackedA computes C = alpha·A·op(B) + beta·C, C m x n, where A is
// packed (op(B) and C as in Sgemm). The result is bitwise what Sgemm gives
// for the same operands, and the same whatever workers is (0:
// runtime.GOMAXPROCS(0)).
func SgemmPackedA(workers int, a *PackedA, transB bool, n int, alpha float32, b []float32, ldb int, beta float32, c []float32, ldc int) {
	p := problem{transB: transB, m: a.m, n: n, k: a.k, alpha: alpha, lda: max(1, a.k), b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, kern: a.kern, packedA: a}
	p.check()
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p.run(workers)
}
