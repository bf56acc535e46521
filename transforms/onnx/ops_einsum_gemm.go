package onnx

import (
	"slices"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The forms of Einsum that exporters emit are batched matrix products
// ("bhid,bhjd->bhij", "bij,bjk->bik", "ik,kj->ij"): two float32 operands
// whose letters are each one of
//
//	batch: in both operands and the output,
//	m:     in the first operand and the output only,
//	n:     in the second operand and the output only,
//	k:     in both operands, not the output (summed over).
//
// Such an equation runs as one package gemm product per batch element: an
// operand whose letters are not already in the order [batch m k] or [batch
// k m] (the first) and [batch k n] or [batch n k] (the second) is copied
// into that order first (a strided copy), and the product [batch m n] is
// copied into the output's order where that differs. The sums are then
// float32 products accumulated as gemm accumulates them (as MatMul's are),
// not float64 sums rounded once. Anything else (a letter summed in one
// operand only, a broadcast axis of length 1, three operands, integers)
// takes the loop of ops_einsum.go.

// einsumProduct is a two-operand equation's letters by role, each in the
// order the product lays them out.
type einsumProduct struct {
	batch, m, n, k []int
}

// productForm returns k's letters by role when k is a batched matrix
// product, ok false otherwise.
func (k *einsumKernel) productForm() (einsumProduct, bool) {
	var f einsumProduct
	if len(k.ops) != 2 {
		return f, false
	}
	a, b := k.ops[0], k.ops[1]
	for _, l := range k.out {
		inA, inB := slices.Contains(a, l), slices.Contains(b, l)
		switch {
		case inA && inB:
			f.batch = append(f.batch, l)
		case inA:
			f.m = append(f.m, l)
		case inB:
			f.n = append(f.n, l)
		}
	}
	for _, l := range a { // the summed letters, in the first operand's order
		if !slices.Contains(k.out, l) {
			if !slices.Contains(b, l) {
				return f, false
			}
			f.k = append(f.k, l)
		}
	}
	for _, l := range b {
		if !slices.Contains(k.out, l) && !slices.Contains(a, l) {
			return f, false
		}
	}
	return f, true
}

// einsumGemm computes a product-form equation (productForm) on float32
// operands with no broadcast axis (each axis the length of its letter);
// ok is false, and nothing is written, otherwise.
func einsumGemm(k *einsumKernel, f einsumProduct, size []int, in []nd.Array, y nd.Array) bool {
	if in[0].Type != nd.Float32 {
		return false
	}
	for j, op := range k.ops {
		for a, l := range op {
			if in[j].Shape[a] != size[l] {
				return false
			}
		}
	}
	prod := func(ls []int) int {
		p := 1
		for _, l := range ls {
			p *= size[l]
		}
		return p
	}
	nb, m, n, kk := prod(f.batch), prod(f.m), prod(f.n), prod(f.k)
	cat := func(parts ...[]int) []int { return slices.Concat(parts...) }
	// Each operand as the product reads it: its data and whether it is
	// transposed (its last two groups swapped).
	operand := func(j int, rows, cols []int) ([]float32, bool) {
		switch {
		case slices.Equal(k.ops[j], cat(f.batch, rows, cols)):
			return nd.MustAs[float32](in[j]), false
		case slices.Equal(k.ops[j], cat(f.batch, cols, rows)):
			return nd.MustAs[float32](in[j]), true
		}
		return permuted(in[j], k.ops[j], cat(f.batch, rows, cols), size), false
	}
	a, ta := operand(0, f.m, f.k)
	b, tb := operand(1, f.k, f.n)
	ys := nd.MustAs[float32](y)
	if len(ys) == 0 {
		return true
	}
	c := ys
	direct := slices.Equal(k.out, cat(f.batch, f.m, f.n))
	if !direct {
		c = make([]float32, len(ys))
	}
	lda, ldb := kk, n
	if ta {
		lda = m
	}
	if tb {
		ldb = kk
	}
	if kk == 0 {
		clear(c)
	} else {
		// The batch on all cores, one product per goroutine at a time;
		// a batch of one gets gemm's own workers. gemm gives the same
		// bits either way.
		workers := parallel.Workers(nb, 2*m*n*kk)
		inner := 1
		if workers == 1 {
			inner = 0
		}
		parallel.Chunks(workers, nb, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gemm.SgemmWorkers(inner, ta, tb, m, n, kk, 1, a[i*m*kk:(i+1)*m*kk], lda, b[i*kk*n:(i+1)*kk*n], ldb, 0, c[i*m*n:(i+1)*m*n], n)
			}
		})
	}
	if !direct {
		permuteInto(ys, c, cat(f.batch, f.m, f.n), k.out, size)
	}
	return true
}

// permuted returns a's elements (float32, its axes the letters from) laid
// out with the axes in the order of the letters to.
func permuted(a nd.Array, from, to []int, size []int) []float32 {
	out := make([]float32, a.Len())
	permuteInto(out, nd.MustAs[float32](a), from, to, size)
	return out
}

// permuteInto writes src (axes the letters from) into dst with the axes in
// the order of the letters to, a strided copy.
func permuteInto(dst, src []float32, from, to []int, size []int) {
	shape := make([]int, len(to))
	for i, l := range to {
		shape[i] = size[l]
	}
	fromShape := make([]int, len(from))
	for i, l := range from {
		fromShape[i] = size[l]
	}
	fromSt := Strides(fromShape)
	srcSt := make([]int, len(to))
	for i, l := range to {
		srcSt[i] = fromSt[slices.Index(from, l)]
	}
	copyStrided(float32Bytes(dst), float32Bytes(src), 4, strided{shape: shape, dstSt: Strides(shape), srcSt: srcSt})
}

// float32Bytes is v's memory as bytes.
func float32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
