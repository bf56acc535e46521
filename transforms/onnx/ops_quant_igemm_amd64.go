//go:build !purego

package onnx

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// igemmAVX2 is igemmTile's kernel (ops_quant_igemm_amd64.s).
//
//go:noescape
func igemmAVX2(a, b *int16, c *int32, kp, ldc int, acc bool)

// igPairsAVX2 is igPairs's kernel (ops_quant_igemm_amd64.s).
//
//go:noescape
func igPairsAVX2(dst, r0, r1 *int16, panels, stride int)

// igWidth is the lanes of the integer product's kernels: 8 int32 sums
// wherever AVX2 is (AVX-512 CPUs run the AVX2 kernels), 0 for the plain Go
// loops; a variable for the tests.
var igWidth = min(simdWidth, 8)

// igemmTile is the igRows x igCols tile c (row stride ldc) = (acc: c +) the product
// of panels a and b over kp pairs of K (igemm).
func igemmTile(a, b []int16, c []int32, kp, ldc int, acc bool) {
	if igWidth == 0 {
		igemmTileGo(a, b, c, kp, ldc, acc)
		return
	}
	_, _, _ = a[kp*2*igRows-1], b[kp*2*igCols-1], c[(igRows-1)*ldc+igCols-1]
	igemmAVX2(unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), kp, ldc, acc)
}

// igPairs interleaves rows r0 and r1 (16 x panels values each) into
// panels of pairs: panel j at dst[j*stride:] gets r0[16j+i], r1[16j+i] for
// i = 0..15.
func igPairs(dst, r0, r1 []int16, panels, stride int) {
	if igWidth == 0 || panels == 0 {
		igPairsGo(dst, r0, r1, panels, stride)
		return
	}
	_, _, _ = dst[(panels-1)*stride+2*igCols-1], r0[panels*igCols-1], r1[panels*igCols-1]
	igPairsAVX2(unsafe.SliceData(dst), unsafe.SliceData(r0), unsafe.SliceData(r1), panels, stride*2)
}

// ubgemmAVX2 and ubgemmTAVX2 are ubgemmTile's kernels
// (ops_quant_igemm_amd64.s): A int8 and B uint8, and the other way round.
//
//go:noescape
func ubgemmAVX2(a, b *byte, c *int32, kq, ldc int, init *int32, acc bool)

//go:noescape
func ubgemmTAVX2(a, b *byte, c *int32, kq, ldc int, init *int32, acc bool)

// ubgemmVNNI is ubgemmTile's kernel where the CPU has AVX-512 VNNI
// (ops_quant_igemm_amd64.s): both operand orders.
//
//go:noescape
func ubgemmVNNI(a, b *byte, c *int32, kq, ldc int, init *int32, acc, aSigned bool)

// ubgemm8x32VNNI is ubgemmTile2's kernel (ops_quant_igemm_amd64.s).
//
//go:noescape
func ubgemm8x32VNNI(a, b *byte, c *int32, kq, ldc int, init *int32, acc, aSigned bool, astride, bstride int)

// ubgemmTile2 is the 8 x 32 tile c (row stride ldc) = (acc: c; else init)
// + the product of two of A's panels (a, and astride bytes on) and two of
// B's (b, and bstride on) over kq quads of K: four ubgemmTiles in one pass,
// where ubVNNI holds (ubgemm calls it only then).
func ubgemmTile2(a, b []byte, c []int32, kq, ldc int, init []int32, acc, aSigned bool, astride, bstride int) {
	_, _, _, _ = a[astride+kq*4*ubRows-1], b[bstride+kq*4*ubCols-1], c[(2*ubRows-1)*ldc+2*ubCols-1], init[2*ubCols-1]
	ubgemm8x32VNNI(unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), kq, ldc, unsafe.SliceData(init), acc, aSigned, astride, bstride)
}

// ubVNNI reports whether ubgemmTile runs on ubgemmVNNI (AVX-512 with
// VNNI; HasAVX512F also checks that the OS saves the registers); a
// variable for the tests.
var ubVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI

// ubQuadsAVX2 is ubQuads's kernel (ops_quant_igemm_amd64.s).
//
//go:noescape
func ubQuadsAVX2(dst, r0, r1, r2, r3 *byte, panels, stride int)

// ubgemmTile is the 4 x 16 tile c (row stride ldc) = (acc: c; else init)
// + the product of panels a and b over kq quads of K (ubgemm); aSigned: A
// int8 and B uint8, else A uint8 and B int8.
func ubgemmTile(a, b []byte, c []int32, kq, ldc int, init []int32, acc, aSigned bool) {
	if igWidth == 0 {
		ubgemmTileGo(a, b, c, kq, ldc, init, acc, aSigned)
		return
	}
	_, _, _, _ = a[kq*4*ubRows-1], b[kq*4*ubCols-1], c[(ubRows-1)*ldc+ubCols-1], init[ubCols-1]
	switch {
	case ubVNNI:
		ubgemmVNNI(unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), kq, ldc, unsafe.SliceData(init), acc, aSigned)
	case aSigned:
		ubgemmAVX2(unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), kq, ldc, unsafe.SliceData(init), acc)
	default:
		ubgemmTAVX2(unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), kq, ldc, unsafe.SliceData(init), acc)
	}
}

// ubQuads interleaves rows r0 to r3 (16 x panels bytes each) into panels
// of quads: panel j at dst[j*stride:] gets r0[16j+i], r1[16j+i],
// r2[16j+i], r3[16j+i] for i = 0..15.
func ubQuads(dst, r0, r1, r2, r3 []byte, panels, stride int) {
	if igWidth == 0 || panels == 0 {
		ubQuadsGo(dst, r0, r1, r2, r3, panels, stride)
		return
	}
	n := panels*ubCols - 1
	_, _, _, _, _ = dst[(panels-1)*stride+4*ubCols-1], r0[n], r1[n], r2[n], r3[n]
	ubQuadsAVX2(unsafe.SliceData(dst), unsafe.SliceData(r0), unsafe.SliceData(r1), unsafe.SliceData(r2), unsafe.SliceData(r3), panels, stride)
}
