//go:build !purego

#include "textflag.h"

// quantPerm reorders the dwords of VPACKSSDW then VPACK?SWB of four
// vectors (packed within 128-bit lanes) back into the values' order.
DATA quantPerm<>+0(SB)/4, $0
DATA quantPerm<>+4(SB)/4, $4
DATA quantPerm<>+8(SB)/4, $1
DATA quantPerm<>+12(SB)/4, $5
DATA quantPerm<>+16(SB)/4, $2
DATA quantPerm<>+20(SB)/4, $6
DATA quantPerm<>+24(SB)/4, $3
DATA quantPerm<>+28(SB)/4, $7
GLOBL quantPerm<>(SB), RODATA|NOPTR, $32

// func quantizeAVX2(y *byte, x *float32, n int, scale, lo, hi float32, zp int32, signed bool) int
//
// y[i] = saturate(round(x[i] / scale) + zp) for i below the returned
// count (n rounded down to a multiple of 32), as quantizeOne: the division
// in float32, NaN made 0, clamped to [lo, hi] (the type's range less zp,
// integers, so clamping before rounding is clamping after), rounded half
// to even (VCVTPS2DQ under Go's rounding mode, to nearest even), plus zp,
// packed to int8 (signed) or uint8.
TEXT ·quantizeAVX2(SB), NOSPLIT, $0-56
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y15
	VBROADCASTSS lo+28(FP), Y13
	VBROADCASTSS hi+32(FP), Y12
	MOVL         zp+36(FP), AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVBLZX      signed+40(FP), R9
	VMOVDQU      quantPerm<>(SB), Y11
	XORQ         DX, DX

qloop:
	LEAQ    32(DX), AX
	CMPQ    AX, CX
	JGT     qdone
	VMOVUPS (SI)(DX*4), Y0
	VMOVUPS 32(SI)(DX*4), Y1
	VMOVUPS 64(SI)(DX*4), Y2
	VMOVUPS 96(SI)(DX*4), Y3
	VDIVPS  Y15, Y0, Y0
	VDIVPS  Y15, Y1, Y1
	VDIVPS  Y15, Y2, Y2
	VDIVPS  Y15, Y3, Y3
	VCMPPS  $7, Y0, Y0, Y4 // ordered: all ones but for NaN
	VCMPPS  $7, Y1, Y1, Y5
	VCMPPS  $7, Y2, Y2, Y6
	VCMPPS  $7, Y3, Y3, Y7
	VANDPS  Y4, Y0, Y0
	VANDPS  Y5, Y1, Y1
	VANDPS  Y6, Y2, Y2
	VANDPS  Y7, Y3, Y3
	VMAXPS  Y13, Y0, Y0
	VMAXPS  Y13, Y1, Y1
	VMAXPS  Y13, Y2, Y2
	VMAXPS  Y13, Y3, Y3
	VMINPS  Y12, Y0, Y0
	VMINPS  Y12, Y1, Y1
	VMINPS  Y12, Y2, Y2
	VMINPS  Y12, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPADDD    Y14, Y0, Y0
	VPADDD    Y14, Y1, Y1
	VPADDD    Y14, Y2, Y2
	VPADDD    Y14, Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	TESTQ     R9, R9
	JNZ       qsigned
	VPACKUSWB Y2, Y0, Y0
	JMP       qstore

qsigned:
	VPACKSSWB Y2, Y0, Y0

qstore:
	VPERMD  Y0, Y11, Y0
	VMOVDQU Y0, (DI)(DX*1)
	ADDQ    $32, DX
	JMP     qloop

qdone:
	VZEROUPPER
	MOVQ DX, ret+48(FP)
	RET

// func minMaxAVX2(x *float32, n int) (lo, hi float32, nan bool)
//
// The least and greatest of x[:n] (n a positive multiple of 16), and
// whether one is NaN (then lo and hi are undefined).
TEXT ·minMaxAVX2(SB), NOSPLIT, $0-25
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	VMOVUPS (SI), Y0
	VMOVUPS Y0, Y1
	VMOVUPS 32(SI), Y2
	VMOVUPS Y2, Y3
	VXORPS  Y4, Y4, Y4
	VXORPS  Y5, Y5, Y5
	XORQ    DX, DX

mloop:
	VMOVUPS (SI)(DX*4), Y6
	VMOVUPS 32(SI)(DX*4), Y7
	VMINPS  Y6, Y0, Y0
	VMAXPS  Y6, Y1, Y1
	VMINPS  Y7, Y2, Y2
	VMAXPS  Y7, Y3, Y3
	VCMPPS  $3, Y6, Y6, Y8 // unordered: NaN
	VCMPPS  $3, Y7, Y7, Y9
	VORPS   Y8, Y4, Y4
	VORPS   Y9, Y5, Y5
	ADDQ    $16, DX
	CMPQ    DX, CX
	JLT     mloop

	VMINPS       Y2, Y0, Y0
	VMAXPS       Y3, Y1, Y1
	VORPS        Y5, Y4, Y4
	VEXTRACTF128 $1, Y0, X2
	VMINPS       X2, X0, X0
	VPERMILPS    $0x4e, X0, X2
	VMINPS       X2, X0, X0
	VPERMILPS    $0xb1, X0, X2
	VMINPS       X2, X0, X0
	VEXTRACTF128 $1, Y1, X3
	VMAXPS       X3, X1, X1
	VPERMILPS    $0x4e, X1, X3
	VMAXPS       X3, X1, X1
	VPERMILPS    $0xb1, X1, X3
	VMAXPS       X3, X1, X1
	VMOVMSKPS    Y4, AX
	VZEROUPPER
	MOVSS        X0, lo+16(FP)
	MOVSS        X1, hi+20(FP)
	TESTL        AX, AX
	SETNE        nan+24(FP)
	RET

// func requantAVX2(y *byte, s *int32, n int, bias int32, mults *float32, step int, lo, hi float32, zp int32, signed bool) int
//
// y[i] = saturate(round(float32(s[i] + bias) x mult_i) + zp) for i below
// the returned count (n rounded down to a multiple of 32), as requantRow:
// the sum plus bias in int32, converted to float32 and multiplied by
// mult_i (mults[i], or mults[i % 32] when step is 0: 32 copies of one), the
// product clamped to [lo, hi] (the type's range less zp), rounded half to
// even, plus zp, packed to int8 (signed) or uint8.
TEXT ·requantAVX2(SB), NOSPLIT, $0-72
	MOVQ         y+0(FP), DI
	MOVQ         s+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVL         bias+24(FP), AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVQ         mults+32(FP), R11
	MOVQ         step+40(FP), R12
	VBROADCASTSS lo+48(FP), Y13
	VBROADCASTSS hi+52(FP), Y12
	MOVL         zp+56(FP), AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVBLZX      signed+60(FP), R9
	VMOVDQU      quantPerm<>(SB), Y11
	XORQ         DX, DX

rqloop:
	LEAQ      32(DX), AX
	CMPQ      AX, CX
	JGT       rqdone
	VPADDD    (SI)(DX*4), Y15, Y0
	VPADDD    32(SI)(DX*4), Y15, Y1
	VPADDD    64(SI)(DX*4), Y15, Y2
	VPADDD    96(SI)(DX*4), Y15, Y3
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	MOVQ      R12, R8
	IMULQ     DX, R8 // step x i: the multipliers' offset in bytes / 4
	VMULPS    (R11)(R8*4), Y0, Y0
	VMULPS    32(R11)(R8*4), Y1, Y1
	VMULPS    64(R11)(R8*4), Y2, Y2
	VMULPS    96(R11)(R8*4), Y3, Y3
	VMAXPS    Y13, Y0, Y0
	VMAXPS    Y13, Y1, Y1
	VMAXPS    Y13, Y2, Y2
	VMAXPS    Y13, Y3, Y3
	VMINPS    Y12, Y0, Y0
	VMINPS    Y12, Y1, Y1
	VMINPS    Y12, Y2, Y2
	VMINPS    Y12, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPADDD    Y14, Y0, Y0
	VPADDD    Y14, Y1, Y1
	VPADDD    Y14, Y2, Y2
	VPADDD    Y14, Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	TESTQ     R9, R9
	JNZ       rqsigned
	VPACKUSWB Y2, Y0, Y0
	JMP       rqstore

rqsigned:
	VPACKSSWB Y2, Y0, Y0

rqstore:
	VPERMD  Y0, Y11, Y0
	VMOVDQU Y0, (DI)(DX*1)
	ADDQ    $32, DX
	JMP     rqloop

rqdone:
	VZEROUPPER
	MOVQ DX, ret+64(FP)
	RET

// DEQUANT is dequantAVX2's loop with ext widening bytes to int32s
// (VPMOVZXBD for uint8, VPMOVSXBD for int8): 16 values a step, then 8.
#define DEQUANT(ext, loop, tail) \
loop: \
	CMPQ      CX, $16 \
	JLT       tail \
	ext       (SI), Y0 \
	ext       8(SI), Y1 \
	VPSUBD    Y4, Y0, Y0 \
	VPSUBD    Y4, Y1, Y1 \
	VCVTDQ2PS Y0, Y0 \
	VCVTDQ2PS Y1, Y1 \
	VMULPS    Y5, Y0, Y0 \
	VMULPS    Y5, Y1, Y1 \
	VMOVUPS   Y0, (DI) \
	VMOVUPS   Y1, 32(DI) \
	ADDQ      $16, SI \
	ADDQ      $64, DI \
	SUBQ      $16, CX \
	JMP       loop \
tail: \
	CMPQ      CX, $8 \
	JLT       dqdone \
	ext       (SI), Y0 \
	VPSUBD    Y4, Y0, Y0 \
	VCVTDQ2PS Y0, Y0 \
	VMULPS    Y5, Y0, Y0 \
	VMOVUPS   Y0, (DI) \
	JMP       dqdone

// func dequantAVX2(y *float32, x *byte, n int, zp int32, scale float32, signed bool)
//
// y[i] = float32(int32(x[i]) - zp) * scale for i < n (n a multiple of 8),
// x's bytes int8 (signed) or uint8: the difference exact in int32 and in
// float32, the product rounded once, the bits of Go's loop.
TEXT ·dequantAVX2(SB), NOSPLIT, $0-33
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVL         zp+24(FP), AX
	VMOVD        AX, X4
	VPBROADCASTD X4, Y4
	VBROADCASTSS scale+28(FP), Y5
	MOVBLZX      signed+32(FP), AX
	TESTQ        AX, AX
	JNZ          dqs
	DEQUANT(VPMOVZXBD, dqu, dqu8)

dqs:
	DEQUANT(VPMOVSXBD, dqs16, dqs8)

dqdone:
	VZEROUPPER
	RET
