//go:build !purego

#include "textflag.h"

// func igemmAVX2(a, b *int16, c *int32, kp, ldc int, acc bool)
//
// The 6 x 16 tile c (row stride ldc int32s) = (acc: c +) A x B over kp
// pairs of K: a is 6 rows' panel (per pair, each row's two values: 24
// bytes), b 16 columns' (per pair, each column's two values: 64 bytes).
// VPMADDWD multiplies a row's pair, broadcast, by 8 columns' pairs and adds
// each pair's two products in int32 (exact: |values| <= 255), VPADDD adds
// them to the sums (Y0 to Y11, two a row).
TEXT ·igemmAVX2(SB), NOSPLIT, $0-41
	MOVQ  a+0(FP), SI
	MOVQ  b+8(FP), BX
	MOVQ  c+16(FP), DI
	MOVQ  kp+24(FP), CX
	MOVQ  ldc+32(FP), DX
	SHLQ  $2, DX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	TESTQ CX, CX
	JZ    igstore

igloop:
	VMOVDQU      (BX), Y12
	VMOVDQU      32(BX), Y13
	VPBROADCASTD 0(SI), Y14
	VPMADDWD     Y12, Y14, Y15
	VPADDD       Y15, Y0, Y0
	VPMADDWD     Y13, Y14, Y15
	VPADDD       Y15, Y1, Y1
	VPBROADCASTD 4(SI), Y14
	VPMADDWD     Y12, Y14, Y15
	VPADDD       Y15, Y2, Y2
	VPMADDWD     Y13, Y14, Y15
	VPADDD       Y15, Y3, Y3
	VPBROADCASTD 8(SI), Y14
	VPMADDWD     Y12, Y14, Y15
	VPADDD       Y15, Y4, Y4
	VPMADDWD     Y13, Y14, Y15
	VPADDD       Y15, Y5, Y5
	VPBROADCASTD 12(SI), Y14
	VPMADDWD     Y12, Y14, Y15
	VPADDD       Y15, Y6, Y6
	VPMADDWD     Y13, Y14, Y15
	VPADDD       Y15, Y7, Y7
	VPBROADCASTD 16(SI), Y14
	VPMADDWD     Y12, Y14, Y15
	VPADDD       Y15, Y8, Y8
	VPMADDWD     Y13, Y14, Y15
	VPADDD       Y15, Y9, Y9
	VPBROADCASTD 20(SI), Y14
	VPMADDWD     Y12, Y14, Y15
	VPADDD       Y15, Y10, Y10
	VPMADDWD     Y13, Y14, Y15
	VPADDD       Y15, Y11, Y11
	ADDQ         $24, SI
	ADDQ         $64, BX
	DECQ         CX
	JNZ          igloop

igstore:
	LEAQ    (DI)(DX*1), R8
	LEAQ    (R8)(DX*1), R9
	LEAQ    (R9)(DX*1), R10
	LEAQ    (R10)(DX*1), R11
	LEAQ    (R11)(DX*1), R12
	MOVBLZX acc+40(FP), AX
	TESTQ   AX, AX
	JZ      igput
	VPADDD  (DI), Y0, Y0
	VPADDD  32(DI), Y1, Y1
	VPADDD  (R8), Y2, Y2
	VPADDD  32(R8), Y3, Y3
	VPADDD  (R9), Y4, Y4
	VPADDD  32(R9), Y5, Y5
	VPADDD  (R10), Y6, Y6
	VPADDD  32(R10), Y7, Y7
	VPADDD  (R11), Y8, Y8
	VPADDD  32(R11), Y9, Y9
	VPADDD  (R12), Y10, Y10
	VPADDD  32(R12), Y11, Y11

igput:
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, (R8)
	VMOVDQU Y3, 32(R8)
	VMOVDQU Y4, (R9)
	VMOVDQU Y5, 32(R9)
	VMOVDQU Y6, (R10)
	VMOVDQU Y7, 32(R10)
	VMOVDQU Y8, (R11)
	VMOVDQU Y9, 32(R11)
	VMOVDQU Y10, (R12)
	VMOVDQU Y11, 32(R12)
	VZEROUPPER
	RET

// func igPairsAVX2(dst, r0, r1 *int16, panels, stride int)
//
// Interleaves rows r0 and r1 (16 x panels int16s each) into panels of
// pairs: panel j (at dst + j x stride bytes) gets r0[16j+i], r1[16j+i]
// for i = 0..15, in order.
TEXT ·igPairsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ r0+8(FP), SI
	MOVQ r1+16(FP), BX
	MOVQ panels+24(FP), CX
	MOVQ stride+32(FP), DX
	TESTQ CX, CX
	JZ    ipdone

iploop:
	VMOVDQU    (SI), Y0
	VMOVDQU    (BX), Y1
	VPUNPCKLWD Y1, Y0, Y2 // pairs 0-3 | 8-11
	VPUNPCKHWD Y1, Y0, Y3 // pairs 4-7 | 12-15
	VPERM2I128 $0x20, Y3, Y2, Y4
	VPERM2I128 $0x31, Y3, Y2, Y5
	VMOVDQU    Y4, (DI)
	VMOVDQU    Y5, 32(DI)
	ADDQ       $32, SI
	ADDQ       $32, BX
	ADDQ       DX, DI
	DECQ       CX
	JNZ        iploop

ipdone:
	VZEROUPPER
	RET

// func ubgemmAVX2(a, b *byte, c *int32, kq, ldc int, init *int32, acc bool)
//
// The 4 x 16 tile c (row stride ldc int32s) = (acc: c; else init, 16 sums
// for every row) + A x B over kq quads of K: a is 4 rows' panel of int8s
// (per quad, each row's four: 16 bytes), b 16 columns' of uint8s (per
// quad, each column's four: 64 bytes). VPMADDUBSW multiplies 32 uint8s
// by int8s and adds each pair's two products in int16 (saturating: the
// caller makes sure a pair of A's values sums to at most 128 in
// magnitude, so that it cannot), VPMADDWD by ones adds the pairs of a quad
// into int32s, VPADDD adds those to the sums.
TEXT ·ubgemmAVX2(SB), NOSPLIT, $0-49
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), DI
	MOVQ kq+24(FP), CX
	MOVQ ldc+32(FP), DX
	MOVQ init+40(FP), R11
	SHLQ $2, DX
	MOVBLZX acc+48(FP), R12
	TESTQ R12, R12
	JNZ   ubzero
	VMOVDQU (R11), Y0
	VMOVDQU 32(R11), Y1
	JMP   ubcopy

ubzero:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

ubcopy:
	VMOVDQA Y0, Y2
	VMOVDQA Y1, Y3
	VMOVDQA Y0, Y4
	VMOVDQA Y1, Y5
	VMOVDQA Y0, Y6
	VMOVDQA Y1, Y7
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // 16 int16 ones
	TESTQ CX, CX
	JZ    ubstore

	CMPQ         CX, $2
	JLT          ubone

ubloop:
	VMOVDQU      (BX), Y8
	VMOVDQU      32(BX), Y9
	VPBROADCASTD (SI), Y10
	VPMADDUBSW   Y10, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   Y10, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y1, Y1
	VPBROADCASTD 4(SI), Y13
	VPMADDUBSW   Y13, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   Y13, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y3, Y3
	VPBROADCASTD 8(SI), Y10
	VPMADDUBSW   Y10, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y4, Y4
	VPMADDUBSW   Y10, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y5, Y5
	VPBROADCASTD 12(SI), Y13
	VPMADDUBSW   Y13, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y6, Y6
	VPMADDUBSW   Y13, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y7, Y7
	VMOVDQU      64(BX), Y8
	VMOVDQU      96(BX), Y9
	VPBROADCASTD 16(SI), Y10
	VPMADDUBSW   Y10, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   Y10, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y1, Y1
	VPBROADCASTD 20(SI), Y13
	VPMADDUBSW   Y13, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   Y13, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y3, Y3
	VPBROADCASTD 24(SI), Y10
	VPMADDUBSW   Y10, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y4, Y4
	VPMADDUBSW   Y10, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y5, Y5
	VPBROADCASTD 28(SI), Y13
	VPMADDUBSW   Y13, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y6, Y6
	VPMADDUBSW   Y13, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y7, Y7
	ADDQ         $32, SI
	ADDQ         $128, BX
	SUBQ         $2, CX
	CMPQ         CX, $2
	JGE          ubloop

ubone:
	TESTQ        CX, CX
	JZ           ubstore
	VMOVDQU      (BX), Y8
	VMOVDQU      32(BX), Y9
	VPBROADCASTD (SI), Y10
	VPMADDUBSW   Y10, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   Y10, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y1, Y1
	VPBROADCASTD 4(SI), Y13
	VPMADDUBSW   Y13, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   Y13, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y3, Y3
	VPBROADCASTD 8(SI), Y10
	VPMADDUBSW   Y10, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y4, Y4
	VPMADDUBSW   Y10, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y5, Y5
	VPBROADCASTD 12(SI), Y13
	VPMADDUBSW   Y13, Y8, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y6, Y6
	VPMADDUBSW   Y13, Y9, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y7, Y7
	ADDQ         $16, SI
	ADDQ         $64, BX

ubstore:
	LEAQ   (DI)(DX*1), R8
	LEAQ   (R8)(DX*1), R9
	LEAQ   (R9)(DX*1), R10
	TESTQ  R12, R12
	JZ     ubput
	VPADDD (DI), Y0, Y0
	VPADDD 32(DI), Y1, Y1
	VPADDD (R8), Y2, Y2
	VPADDD 32(R8), Y3, Y3
	VPADDD (R9), Y4, Y4
	VPADDD 32(R9), Y5, Y5
	VPADDD (R10), Y6, Y6
	VPADDD 32(R10), Y7, Y7

ubput:
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, (R8)
	VMOVDQU Y3, 32(R8)
	VMOVDQU Y4, (R9)
	VMOVDQU Y5, 32(R9)
	VMOVDQU Y6, (R10)
	VMOVDQU Y7, 32(R10)
	VZEROUPPER
	RET

// func ubgemmTAVX2(a, b *byte, c *int32, kq, ldc int, init *int32, acc bool)
//
// ubgemmAVX2 with A's values uint8 and B's int8 (a pair of B's values
// sums to at most 128 in magnitude).
TEXT ·ubgemmTAVX2(SB), NOSPLIT, $0-49
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), DI
	MOVQ kq+24(FP), CX
	MOVQ ldc+32(FP), DX
	MOVQ init+40(FP), R11
	SHLQ $2, DX
	MOVBLZX acc+48(FP), R12
	TESTQ R12, R12
	JNZ   tubzero
	VMOVDQU (R11), Y0
	VMOVDQU 32(R11), Y1
	JMP   tubcopy

tubzero:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

tubcopy:
	VMOVDQA Y0, Y2
	VMOVDQA Y1, Y3
	VMOVDQA Y0, Y4
	VMOVDQA Y1, Y5
	VMOVDQA Y0, Y6
	VMOVDQA Y1, Y7
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // 16 int16 ones
	TESTQ CX, CX
	JZ    tubstore

tubloop:
	VMOVDQU      (BX), Y8
	VMOVDQU      32(BX), Y9
	VPBROADCASTD (SI), Y10
	VPMADDUBSW   Y8, Y10, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   Y9, Y10, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y1, Y1
	VPBROADCASTD 4(SI), Y13
	VPMADDUBSW   Y8, Y13, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   Y9, Y13, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y3, Y3
	VPBROADCASTD 8(SI), Y10
	VPMADDUBSW   Y8, Y10, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y4, Y4
	VPMADDUBSW   Y9, Y10, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y5, Y5
	VPBROADCASTD 12(SI), Y13
	VPMADDUBSW   Y8, Y13, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y6, Y6
	VPMADDUBSW   Y9, Y13, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y7, Y7
	ADDQ         $16, SI
	ADDQ         $64, BX
	DECQ         CX
	JNZ          tubloop

tubstore:
	LEAQ   (DI)(DX*1), R8
	LEAQ   (R8)(DX*1), R9
	LEAQ   (R9)(DX*1), R10
	TESTQ  R12, R12
	JZ     tubput
	VPADDD (DI), Y0, Y0
	VPADDD 32(DI), Y1, Y1
	VPADDD (R8), Y2, Y2
	VPADDD 32(R8), Y3, Y3
	VPADDD (R9), Y4, Y4
	VPADDD 32(R9), Y5, Y5
	VPADDD (R10), Y6, Y6
	VPADDD 32(R10), Y7, Y7

tubput:
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, (R8)
	VMOVDQU Y3, 32(R8)
	VMOVDQU Y4, (R9)
	VMOVDQU Y5, 32(R9)
	VMOVDQU Y6, (R10)
	VMOVDQU Y7, 32(R10)
	VZEROUPPER
	RET

// func ubQuadsAVX2(dst, r0, r1, r2, r3 *byte, panels, stride int)
//
// Interleaves rows r0 to r3 (16 x panels bytes each) into panels of quads:
// panel j (at dst + j x stride bytes) gets r0[16j+i], r1[16j+i],
// r2[16j+i], r3[16j+i] for i = 0..15, in order.
TEXT ·ubQuadsAVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ r0+8(FP), SI
	MOVQ r1+16(FP), BX
	MOVQ r2+24(FP), R8
	MOVQ r3+32(FP), R9
	MOVQ panels+40(FP), CX
	MOVQ stride+48(FP), DX
	TESTQ CX, CX
	JZ    uqdone

uqloop:
	VMOVDQU    (SI), X0
	VMOVDQU    (BX), X1
	VMOVDQU    (R8), X2
	VMOVDQU    (R9), X3
	VPUNPCKLBW X1, X0, X4 // r0 r1 of 0-7
	VPUNPCKHBW X1, X0, X5 // of 8-15
	VPUNPCKLBW X3, X2, X6 // r2 r3 of 0-7
	VPUNPCKHBW X3, X2, X7
	VPUNPCKLWD X6, X4, X8 // quads 0-3
	VPUNPCKHWD X6, X4, X9 // 4-7
	VPUNPCKLWD X7, X5, X10 // 8-11
	VPUNPCKHWD X7, X5, X11 // 12-15
	VMOVDQU    X8, (DI)
	VMOVDQU    X9, 16(DI)
	VMOVDQU    X10, 32(DI)
	VMOVDQU    X11, 48(DI)
	ADDQ       $16, SI
	ADDQ       $16, BX
	ADDQ       $16, R8
	ADDQ       $16, R9
	ADDQ       DX, DI
	DECQ       CX
	JNZ        uqloop

uqdone:
	RET


// QUADS and QUADU add one quad of K to a 4 x 16 tile's sums a0..a3: B's
// quad of 16 columns (64 bytes at boff(BX), one Z register) by A's 4 rows'
// quads broadcast from off(SI). VPDPBUSD multiplies its second source's
// uint8s by its first's int8s and adds each quad's four products to an
// int32, exactly: QUADS takes A's values as the int8s (ubgemmAVX2's
// case), QUADU B's (ubgemmTAVX2's).
#define QUADS(off, boff, a0, a1, a2, a3) \
	VMOVDQU32    boff(BX), Z8 \
	VPBROADCASTD off(SI), Z9 \
	VPBROADCASTD off+4(SI), Z10 \
	VPBROADCASTD off+8(SI), Z11 \
	VPBROADCASTD off+12(SI), Z12 \
	VPDPBUSD     Z9, Z8, a0 \
	VPDPBUSD     Z10, Z8, a1 \
	VPDPBUSD     Z11, Z8, a2 \
	VPDPBUSD     Z12, Z8, a3

#define QUADU(off, boff, a0, a1, a2, a3) \
	VMOVDQU32    boff(BX), Z8 \
	VPBROADCASTD off(SI), Z9 \
	VPBROADCASTD off+4(SI), Z10 \
	VPBROADCASTD off+8(SI), Z11 \
	VPBROADCASTD off+12(SI), Z12 \
	VPDPBUSD     Z8, Z9, a0 \
	VPDPBUSD     Z8, Z10, a1 \
	VPDPBUSD     Z8, Z11, a2 \
	VPDPBUSD     Z8, Z12, a3

// func ubgemmVNNI(a, b *byte, c *int32, kq, ldc int, init *int32, acc, aSigned bool)
//
// ubgemmAVX2 (aSigned) and ubgemmTAVX2 (not) on AVX-512 VNNI: the same
// panels and tile, a row of 16 sums one Z register, each quad of K one
// VPDPBUSD a row (no int16 step: exact for any int8 and uint8 values). Two
// quads a step into two sets of sums (the second set's chains hide the
// first's latency), added at the end.
TEXT ·ubgemmVNNI(SB), NOSPLIT, $0-50
	MOVQ    a+0(FP), SI
	MOVQ    b+8(FP), BX
	MOVQ    c+16(FP), DI
	MOVQ    kq+24(FP), CX
	MOVQ    ldc+32(FP), DX
	MOVQ    init+40(FP), R11
	SHLQ    $2, DX
	MOVBLZX acc+48(FP), R12
	MOVBLZX aSigned+49(FP), R13
	VPXORD  Z0, Z0, Z0
	TESTQ   R12, R12
	JNZ     vcopy
	VMOVDQU32 (R11), Z0

vcopy:
	VMOVDQA32 Z0, Z1
	VMOVDQA32 Z0, Z2
	VMOVDQA32 Z0, Z3
	VPXORD    Z4, Z4, Z4
	VPXORD    Z5, Z5, Z5
	VPXORD    Z6, Z6, Z6
	VPXORD    Z7, Z7, Z7
	TESTQ     R13, R13
	JZ        vuloop

vsloop:
	CMPQ CX, $2
	JLT  vsone
	QUADS(0, 0, Z0, Z1, Z2, Z3)
	QUADS(16, 64, Z4, Z5, Z6, Z7)
	ADDQ $32, SI
	ADDQ $128, BX
	SUBQ $2, CX
	JMP  vsloop

vsone:
	TESTQ CX, CX
	JZ    vsum
	QUADS(0, 0, Z0, Z1, Z2, Z3)
	JMP   vsum

vuloop:
	CMPQ CX, $2
	JLT  vuone
	QUADU(0, 0, Z0, Z1, Z2, Z3)
	QUADU(16, 64, Z4, Z5, Z6, Z7)
	ADDQ $32, SI
	ADDQ $128, BX
	SUBQ $2, CX
	JMP  vuloop

vuone:
	TESTQ CX, CX
	JZ    vsum
	QUADU(0, 0, Z0, Z1, Z2, Z3)

vsum:
	VPADDD Z4, Z0, Z0
	VPADDD Z5, Z1, Z1
	VPADDD Z6, Z2, Z2
	VPADDD Z7, Z3, Z3
	LEAQ   (DI)(DX*1), R8
	LEAQ   (R8)(DX*1), R9
	LEAQ   (R9)(DX*1), R10
	TESTQ  R12, R12
	JZ     vput
	VPADDD (DI), Z0, Z0
	VPADDD (R8), Z1, Z1
	VPADDD (R9), Z2, Z2
	VPADDD (R10), Z3, Z3

vput:
	VMOVDQU32 Z0, (DI)
	VMOVDQU32 Z1, (R8)
	VMOVDQU32 Z2, (R9)
	VMOVDQU32 Z3, (R10)
	VZEROUPPER
	RET

// ROWS8S and ROWS8U add one quad of K to two rows of an 8 x 32 tile:
// rows off(reg) and off+4(reg) of A broadcast, times B's two panels' quads
// (Z16, Z17), into a0 a1 (the first row's two halves) and a2 a3. S: A's
// values are VPDPBUSD's int8s; U: B's.
#define ROWS8S(reg, off, a0, a1, a2, a3) \
	VPBROADCASTD off(reg), Z18 \
	VPBROADCASTD off+4(reg), Z19 \
	VPDPBUSD     Z18, Z16, a0 \
	VPDPBUSD     Z18, Z17, a1 \
	VPDPBUSD     Z19, Z16, a2 \
	VPDPBUSD     Z19, Z17, a3

#define ROWS8U(reg, off, a0, a1, a2, a3) \
	VPBROADCASTD off(reg), Z18 \
	VPBROADCASTD off+4(reg), Z19 \
	VPDPBUSD     Z16, Z18, a0 \
	VPDPBUSD     Z17, Z18, a1 \
	VPDPBUSD     Z16, Z19, a2 \
	VPDPBUSD     Z17, Z19, a3

// func ubgemm8x32VNNI(a, b *byte, c *int32, kq, ldc int, init *int32, acc, aSigned bool, astride, bstride int)
//
// The 8 x 32 tile c = (acc: c; else init, 32 sums for every row) + A x B
// over kq quads: two of A's 4-row panels (a, and astride bytes on) by two
// of B's 16-column panels (b, and bstride bytes on), ubgemmVNNI's four
// tiles in one pass: per quad two loads of B and eight broadcasts of A
// for sixteen VPDPBUSD, each row's 32 sums two Z registers (Z0 to Z15).
TEXT ·ubgemm8x32VNNI(SB), NOSPLIT, $0-72
	MOVQ    a+0(FP), SI
	MOVQ    b+8(FP), BX
	MOVQ    c+16(FP), DI
	MOVQ    kq+24(FP), CX
	MOVQ    ldc+32(FP), DX
	MOVQ    init+40(FP), R11
	SHLQ    $2, DX
	MOVBLZX acc+48(FP), R12
	MOVBLZX aSigned+49(FP), R13
	MOVQ    astride+56(FP), R9
	ADDQ    SI, R9 // A's second panel
	MOVQ    bstride+64(FP), R10
	ADDQ    BX, R10 // B's second panel
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1
	TESTQ   R12, R12
	JNZ     bcopy
	VMOVDQU32 (R11), Z0
	VMOVDQU32 64(R11), Z1

bcopy:
	VMOVDQA32 Z0, Z2
	VMOVDQA32 Z1, Z3
	VMOVDQA32 Z0, Z4
	VMOVDQA32 Z1, Z5
	VMOVDQA32 Z0, Z6
	VMOVDQA32 Z1, Z7
	VMOVDQA32 Z0, Z8
	VMOVDQA32 Z1, Z9
	VMOVDQA32 Z0, Z10
	VMOVDQA32 Z1, Z11
	VMOVDQA32 Z0, Z12
	VMOVDQA32 Z1, Z13
	VMOVDQA32 Z0, Z14
	VMOVDQA32 Z1, Z15
	TESTQ     CX, CX
	JZ        bstore
	TESTQ     R13, R13
	JZ        buloop

bsloop:
	VMOVDQU32 (BX), Z16
	VMOVDQU32 (R10), Z17
	ROWS8S(SI, 0, Z0, Z1, Z2, Z3)
	ROWS8S(SI, 8, Z4, Z5, Z6, Z7)
	ROWS8S(R9, 0, Z8, Z9, Z10, Z11)
	ROWS8S(R9, 8, Z12, Z13, Z14, Z15)
	ADDQ $16, SI
	ADDQ $16, R9
	ADDQ $64, BX
	ADDQ $64, R10
	DECQ CX
	JNZ  bsloop
	JMP  bstore

buloop:
	VMOVDQU32 (BX), Z16
	VMOVDQU32 (R10), Z17
	ROWS8U(SI, 0, Z0, Z1, Z2, Z3)
	ROWS8U(SI, 8, Z4, Z5, Z6, Z7)
	ROWS8U(R9, 0, Z8, Z9, Z10, Z11)
	ROWS8U(R9, 8, Z12, Z13, Z14, Z15)
	ADDQ $16, SI
	ADDQ $16, R9
	ADDQ $64, BX
	ADDQ $64, R10
	DECQ CX
	JNZ  buloop

bstore:
	TESTQ R12, R12
	JZ    bput
	MOVQ  DI, R8
	VPADDD (R8), Z0, Z0
	VPADDD 64(R8), Z1, Z1
	ADDQ   DX, R8
	VPADDD (R8), Z2, Z2
	VPADDD 64(R8), Z3, Z3
	ADDQ   DX, R8
	VPADDD (R8), Z4, Z4
	VPADDD 64(R8), Z5, Z5
	ADDQ   DX, R8
	VPADDD (R8), Z6, Z6
	VPADDD 64(R8), Z7, Z7
	ADDQ   DX, R8
	VPADDD (R8), Z8, Z8
	VPADDD 64(R8), Z9, Z9
	ADDQ   DX, R8
	VPADDD (R8), Z10, Z10
	VPADDD 64(R8), Z11, Z11
	ADDQ   DX, R8
	VPADDD (R8), Z12, Z12
	VPADDD 64(R8), Z13, Z13
	ADDQ   DX, R8
	VPADDD (R8), Z14, Z14
	VPADDD 64(R8), Z15, Z15

bput:
	VMOVDQU32 Z0, (DI)
	VMOVDQU32 Z1, 64(DI)
	ADDQ      DX, DI
	VMOVDQU32 Z2, (DI)
	VMOVDQU32 Z3, 64(DI)
	ADDQ      DX, DI
	VMOVDQU32 Z4, (DI)
	VMOVDQU32 Z5, 64(DI)
	ADDQ      DX, DI
	VMOVDQU32 Z6, (DI)
	VMOVDQU32 Z7, 64(DI)
	ADDQ      DX, DI
	VMOVDQU32 Z8, (DI)
	VMOVDQU32 Z9, 64(DI)
	ADDQ      DX, DI
	VMOVDQU32 Z10, (DI)
	VMOVDQU32 Z11, 64(DI)
	ADDQ      DX, DI
	VMOVDQU32 Z12, (DI)
	VMOVDQU32 Z13, 64(DI)
	ADDQ      DX, DI
	VMOVDQU32 Z14, (DI)
	VMOVDQU32 Z15, 64(DI)
	VZEROUPPER
	RET
