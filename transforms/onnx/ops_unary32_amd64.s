//go:build !purego

#include "textflag.h"

// func sinCosAVX2(y, x *float32, n int, tab *[17][8]uint32, cos bool) int
//
// y[i] = sinCos1(x[i]) for i below the returned count (a multiple of 8 no
// larger than n): the same operations in the same order, 8 lanes at a
// time. It stops before the first 8 values holding one whose magnitude is
// not below 8192, or NaN (left to Go). tab's rows (32 bytes each): 4/π,
// π/4's three parts, 8192, sin's three coefficients, cos's three, 0.5, 1,
// then the integers 1 and 2 and the masks 0x7fffffff and 0x80000000.
TEXT ·sinCosAVX2(SB), NOSPLIT, $0-48
	MOVQ     y+0(FP), DI
	MOVQ     x+8(FP), SI
	MOVQ     n+16(FP), CX
	MOVQ     tab+24(FP), R8
	MOVBLZX  cos+32(FP), R9
	XORQ     DX, DX
	VPXOR    Y15, Y15, Y15 // all ones for cos
	TESTQ    R9, R9
	JZ       scloop
	VPCMPEQD Y15, Y15, Y15

scloop:
	LEAQ      8(DX), AX
	CMPQ      AX, CX
	JGT       scdone
	VMOVUPS   (SI)(DX*4), Y0      // x
	VANDPS    480(R8), Y0, Y1     // a = |x|
	VCMPPS    $5, 128(R8), Y1, Y2 // !(a < 8192), NaN too
	VMOVMSKPS Y2, AX
	TESTL     AX, AX
	JNZ       scdone

	VMULPS     0(R8), Y1, Y3
	VCVTTPS2DQ Y3, Y3          // j
	VPAND      416(R8), Y3, Y4 // j & 1
	VPADDD     Y4, Y3, Y3      // j even
	VCVTDQ2PS  Y3, Y4          // fj
	VMULPS     32(R8), Y4, Y5
	VSUBPS     Y5, Y1, Y5
	VMULPS     64(R8), Y4, Y6
	VSUBPS     Y6, Y5, Y5
	VMULPS     96(R8), Y4, Y6
	VSUBPS     Y6, Y5, Y5 // r
	VMULPS     Y5, Y5, Y6 // z

	VMULPS 160(R8), Y6, Y7 // sin's polynomial
	VADDPS 192(R8), Y7, Y7
	VMULPS Y6, Y7, Y7
	VADDPS 224(R8), Y7, Y7
	VMULPS Y6, Y7, Y7
	VMULPS Y5, Y7, Y7
	VADDPS Y5, Y7, Y7

	VMULPS 256(R8), Y6, Y8 // cos's polynomial
	VADDPS 288(R8), Y8, Y8
	VMULPS Y6, Y8, Y8
	VADDPS 320(R8), Y8, Y8
	VMULPS Y6, Y8, Y8
	VMULPS Y6, Y8, Y8
	VMULPS 352(R8), Y6, Y9
	VSUBPS Y9, Y8, Y8
	VADDPS 384(R8), Y8, Y8

	// cos's polynomial where j's bit 1 is set for sin, clear for cos.
	VPAND     448(R8), Y3, Y10
	VPCMPEQD  448(R8), Y10, Y10
	VPXOR     Y15, Y10, Y10
	VBLENDVPS Y10, Y8, Y7, Y11

	// The sign: j's bit 2, and x's sign for sin, j's bit 1 for cos.
	VPSLLD $29, Y3, Y12
	VPSLLD $30, Y3, Y13
	VPAND  Y15, Y13, Y13
	VPANDN Y0, Y15, Y14
	VPXOR  Y13, Y12, Y12
	VPXOR  Y14, Y12, Y12
	VPAND  512(R8), Y12, Y12
	VXORPS Y12, Y11, Y11

	VMOVUPS Y11, (DI)(DX*4)
	ADDQ    $8, DX
	JMP     scloop

scdone:
	VZEROUPPER
	MOVQ DX, ret+40(FP)
	RET

// Rows of eluTab (ops_unary32_amd64.go): expTab's (numeric_amd64.go), then
// expm1Block32's.
#define E_LOG2E 0(R8)
#define E_ROUND 32(R8)
#define E_LN2HI 64(R8)
#define E_LN2LO 96(R8)
#define E_C5040 128(R8)
#define E_C720 160(R8)
#define E_C120 192(R8)
#define E_C24 224(R8)
#define E_C6 256(R8)
#define E_C2 288(R8)
#define E_ONE 320(R8)
#define E_LOWNORM 384(R8)
#define E_ZEROBELOW 416(R8)
#define E_TWOM64 448(R8)
#define E_BIAS 480(R8)
#define E_BIASLOW 512(R8)
#define E_C40320 544(R8)
#define E_SMALL 576(R8)

// EXPM1: Y4 = expm1Block32's e^x - 1 of Y0 (x <= 0, or NaN): Taylor's
// polynomial above -0.35, expf(x) - 1 below, both computed and one kept.
// expf is expAVX2's sequence (x <= 0 never takes its math.Exp case; NaN
// stays NaN). Uses Y1 to Y9; Y14 holds 1.0.
#define EXPM1 \
	VMULPS    E_LOG2E, Y0, Y1; \
	VADDPS    E_ROUND, Y1, Y1; \
	VSUBPS    E_ROUND, Y1, Y2; \
	VMULPS    E_LN2HI, Y2, Y3; \
	VSUBPS    Y3, Y0, Y3; \
	VMULPS    E_LN2LO, Y2, Y4; \
	VSUBPS    Y4, Y3, Y3; \
	VMOVUPS E_C5040, Y4; \
	VFMADD213PS E_C720, Y3, Y4; \
	VFMADD213PS E_C120, Y3, Y4; \
	VFMADD213PS E_C24, Y3, Y4; \
	VFMADD213PS E_C6, Y3, Y4; \
	VFMADD213PS E_C2, Y3, Y4; \
	VFMADD213PS Y14, Y3, Y4; \
	VFMADD213PS Y14, Y3, Y4; \
	VCMPPS    $1, E_LOWNORM, Y0, Y5; \
	VMOVUPS   E_BIAS, Y6; \
	VBLENDVPS Y5, E_BIASLOW, Y6, Y6; \
	VPSUBD    Y6, Y1, Y6; \
	VPSLLD    $23, Y6, Y6; \
	VMULPS    Y6, Y4, Y4; \
	VBLENDVPS Y5, E_TWOM64, Y14, Y7; \
	VMULPS    Y7, Y4, Y4; \
	VCMPPS    $1, E_ZEROBELOW, Y0, Y5; \
	VANDNPS   Y4, Y5, Y4; \
	VSUBPS    Y14, Y4, Y4; \
	VMULPS    E_C40320, Y0, Y8; \
	VADDPS    E_C5040, Y8, Y8; \
	VMULPS    Y0, Y8, Y8; \
	VADDPS    E_C720, Y8, Y8; \
	VMULPS    Y0, Y8, Y8; \
	VADDPS    E_C120, Y8, Y8; \
	VMULPS    Y0, Y8, Y8; \
	VADDPS    E_C24, Y8, Y8; \
	VMULPS    Y0, Y8, Y8; \
	VADDPS    E_C6, Y8, Y8; \
	VMULPS    Y0, Y8, Y8; \
	VADDPS    E_C2, Y8, Y8; \
	VMULPS    Y0, Y8, Y8; \
	VADDPS    Y14, Y8, Y8; \
	VMULPS    Y0, Y8, Y8; \
	VCMPPS    $14, E_SMALL, Y0, Y9; \
	VBLENDVPS Y9, Y8, Y4, Y4

// func eluAVX2(y, x *float32, n int, alpha, scale float32, celu bool, tab *[19][8]float32)
//
// y[i] for i < n (a multiple of 8), as unaryBlock32 computes it, the same
// bits, without a branch on the values: Selu (celu false) scale x above
// 0, scale (alpha (e^x - 1)) below; Celu max(x, 0) + alpha (e^(x/alpha) -
// 1) with the exponent's argument min(x/alpha, 0). NaN gives NaN. y may
// be x.
TEXT ·eluAVX2(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y12
	VBROADCASTSS scale+28(FP), Y11
	MOVBLZX      celu+32(FP), BX
	MOVQ         tab+40(FP), R8
	VXORPS       Y10, Y10, Y10
	VMOVUPS      E_ONE, Y14
	TESTL        BX, BX
	JNZ          celuloop

seluloop:
	CMPQ      CX, $8
	JLT       eludone
	VMOVUPS   (SI), Y13
	VMINPS    Y13, Y10, Y0     // min(x, 0): x where not 0 < x (-0 and NaN kept)
	EXPM1
	VMULPS    Y12, Y4, Y4
	VMULPS    Y11, Y4, Y4      // scale (alpha (e^x - 1))
	VMULPS    Y11, Y13, Y5     // scale x
	VCMPPS    $14, Y10, Y13, Y6 // x > 0
	VBLENDVPS Y6, Y5, Y4, Y4
	VMOVUPS   Y4, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       seluloop

celuloop:
	CMPQ    CX, $8
	JLT     eludone
	VMOVUPS (SI), Y13
	VDIVPS  Y12, Y13, Y0
	VMINPS  Y0, Y10, Y0       // min(x/alpha, 0)
	EXPM1
	VMULPS  Y12, Y4, Y4       // alpha (e^(x/alpha) - 1)
	VMAXPS  Y10, Y13, Y5      // max(x, 0): 0 where not x > 0 (+0 for -0)
	VADDPS  Y4, Y5, Y4
	VMOVUPS Y4, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     celuloop

eludone:
	VZEROUPPER
	RET
