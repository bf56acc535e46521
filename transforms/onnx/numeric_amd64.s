//go:build !purego

#include "textflag.h"

// The vector form of expf (numeric.go): the same float32 operations in the
// same order, 8 lanes at a time, so each lane's bits are expf's. No FMA:
// expf's products and sums are rounded one by one, and so are these.

#include "expf_amd64.h"

// func expAVX2(y, x *float32, n int, sub float32, tab *float32) int
//
// y[i] = expf(x[i] - sub) for i below the returned count, a multiple of 8
// no larger than n: the kernel stops before the first 8 values of which
// one, less sub, is over 88 or NaN (expf's math.Exp cases), and leaves
// those to Go. y may be x.
TEXT ·expAVX2(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS sub+24(FP), Y15
	MOVQ         tab+32(FP), R8
	XORQ         DX, DX

loop:
	LEAQ      8(DX), AX
	CMPQ      AX, CX
	JGT       done
	VMOVUPS   (SI)(DX*4), Y0
	VSUBPS    Y15, Y0, Y0  // x - sub
	VCMPPS    $6, HI, Y0, Y1  // !(x <= 88): over, or NaN
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       done

	EXPF
	VMOVUPS   Y4, (DI)(DX*4)
	ADDQ      $8, DX
	JMP       loop

done:
	VZEROUPPER
	MOVQ DX, ret+40(FP)
	RET

// Rows of erfTab (numeric_amd64.go): erff's constants, then expf's.
#define E_ABS 0(R8)
#define E_SIGN 32(R8)
#define E_ONE 64(R8)
#define E_FOUR 96(R8)
#define E_HALF5 128(R8)
#define E_P0 160(R8)
#define E_P1 192(R8)
#define E_P2 224(R8)
#define E_P3 256(R8)
#define E_P4 288(R8)
#define E_P5 320(R8)
#define E_P6 352(R8)
#define E_R0 384(R8)
#define E_R1 416(R8)
#define E_R2 448(R8)
#define E_R3 480(R8)
#define E_R4 512(R8)
#define E_R5 544(R8)
#define E_R6 576(R8)
#define E_R7 608(R8)
#define E_R8 640(R8)
#define E_R9 672(R8)
#define E_R10 704(R8)
#define E_LOG2E 736(R8)
#define E_ROUND 768(R8)
#define E_LN2HI 800(R8)
#define E_LN2LO 832(R8)
#define E_C5040 864(R8)
#define E_C720 896(R8)
#define E_C120 928(R8)
#define E_C24 960(R8)
#define E_C6 992(R8)
#define E_C2 1024(R8)
#define E_BIAS 1056(R8)
#define E_SQRTH 1088(R8)
#define E_HALF 1120(R8)

// ERF computes erff of Y0 into Y9, 8 lanes, as erff computes it (numeric.go:
// x P(x²) below 1, ±(1 - e^-a² R(a - 2.5)) below 4, ±1 beyond, NaN kept).
// R8 holds erfTab, Y15 the absolute-value mask; clobbers Y1 to Y11.
#define ERF \
	VANDPS  Y15, Y0, Y1 \
	VMULPS Y0, Y0, Y2 \
	VMOVUPS E_P6, Y3 \
	VFMADD213PS E_P5, Y2, Y3 \
	VFMADD213PS E_P4, Y2, Y3 \
	VFMADD213PS E_P3, Y2, Y3 \
	VFMADD213PS E_P2, Y2, Y3 \
	VFMADD213PS E_P1, Y2, Y3 \
	VFMADD213PS E_P0, Y2, Y3 \
	VMULPS Y3, Y0, Y3 \
	VSUBPS E_HALF5, Y1, Y4 \
	VMOVUPS E_R10, Y5 \
	VFMADD213PS E_R9, Y4, Y5 \
	VFMADD213PS E_R8, Y4, Y5 \
	VFMADD213PS E_R7, Y4, Y5 \
	VFMADD213PS E_R6, Y4, Y5 \
	VFMADD213PS E_R5, Y4, Y5 \
	VFMADD213PS E_R4, Y4, Y5 \
	VFMADD213PS E_R3, Y4, Y5 \
	VFMADD213PS E_R2, Y4, Y5 \
	VFMADD213PS E_R1, Y4, Y5 \
	VFMADD213PS E_R0, Y4, Y5 \
	VXORPS E_SIGN, Y1, Y6 \
	VMULPS Y1, Y6, Y6 \
	VMULPS E_LOG2E, Y6, Y8 \
	VADDPS E_ROUND, Y8, Y8 \
	VSUBPS E_ROUND, Y8, Y9 \
	VMULPS E_LN2HI, Y9, Y10 \
	VSUBPS Y10, Y6, Y10 \
	VMULPS E_LN2LO, Y9, Y11 \
	VSUBPS Y11, Y10, Y10 \
	VMOVUPS E_C5040, Y11 \
	VFMADD213PS E_C720, Y10, Y11 \
	VFMADD213PS E_C120, Y10, Y11 \
	VFMADD213PS E_C24, Y10, Y11 \
	VFMADD213PS E_C6, Y10, Y11 \
	VFMADD213PS E_C2, Y10, Y11 \
	VFMADD213PS E_ONE, Y10, Y11 \
	VFMADD213PS E_ONE, Y10, Y11 \
	VPSUBD E_BIAS, Y8, Y8 \
	VPSLLD $23, Y8, Y8 \
	VMULPS Y8, Y11, Y7 \
	VMULPS Y5, Y7, Y7 \
	VMOVUPS E_ONE, Y8 \
	VSUBPS Y7, Y8, Y7 \
	VANDPS E_SIGN, Y0, Y8 \
	VXORPS Y8, Y7, Y7 \
	VORPS     E_ONE, Y8, Y9 \
	VCMPPS    $3, Y0, Y0, Y10 \
	VBLENDVPS Y10, Y0, Y9, Y9 \
	VCMPPS    $1, E_FOUR, Y1, Y10 \
	VBLENDVPS Y10, Y7, Y9, Y9 \
	VCMPPS    $1, E_ONE, Y1, Y10 \
	VBLENDVPS Y10, Y3, Y9, Y9

// func erfAVX2(y, x *float32, n int, tab *[36][8]float32, gelu int)
//
// y[i] = erff(x[i]) for i < n, n a multiple of 8: both of erff's
// polynomials and its e^-x² (expf's normal range: -x² is in (-16, -1]
// where it is used) for every lane, then each lane's own case kept. With
// gelu != 0 it is Gelu's y[i] = 0.5 x[i] (1 + erff(x[i] 0.70710678))
// instead, the product and the sums rounded in unaryBlock32's order (the
// same bits).
TEXT ·erfAVX2(SB), NOSPLIT, $0-40
	MOVQ    y+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    tab+24(FP), R8
	MOVQ    gelu+32(FP), R9
	VMOVUPS E_ABS, Y15

erfloop:
	CMPQ    CX, $8
	JLT     erfdone
	VMOVUPS (SI), Y0
	TESTQ   R9, R9
	JZ      erfin
	VMOVUPS Y0, Y14
	VMULPS  E_SQRTH, Y14, Y0 // x / √2

erfin:
	ERF
	TESTQ     R9, R9
	JZ        erfout
	VADDPS    E_ONE, Y9, Y9    // 1 + erf
	VMULPS    E_HALF, Y14, Y12 // x/2
	VMULPS    Y9, Y12, Y9

erfout:
	VMOVUPS   Y9, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       erfloop

erfdone:
	VZEROUPPER
	RET

// SIGMOID computes sigmoidInto's σ of Y13 into Y9, 8 lanes (no NaN: the
// callers stop before one): t = expf(-|x|) by EXPF, then 1/(1+t) where
// x's sign bit is clear, t/(1+t) where it is set. Y14 holds 1.0 in every
// lane, Y15 the sign bit; clobbers Y0 to Y8.
#define SIGMOID \
	VORPS     Y15, Y13, Y0 \
	EXPF \
	VADDPS    Y14, Y4, Y8 \
	VBLENDVPS Y13, Y4, Y14, Y9 \
	VDIVPS    Y8, Y9, Y9

// func sigmoidAVX2(y, x *float32, n int, tab *[17][8]float32, silu int) int
//
// y[i] = sigmoidInto's value of x[i] for i below the returned count (a
// multiple of 8 no larger than n): t = expf(-|x|) as expAVX2 computes it,
// then 1/(1+t) where x's sign bit is clear, t/(1+t) where it is set; with
// silu nonzero, that times x[i] (SiLU, as Sigmoid then Mul compute it). It
// stops before the first 8 values holding a NaN (left to Go). y may be x.
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-48
	MOVQ    y+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    tab+24(FP), R8
	MOVQ    silu+32(FP), R9
	XORQ    DX, DX
	VMOVUPS ONE, Y14
	VXORPS  Y15, Y15, Y15
	VSUBPS  Y14, Y15, Y15  // -1.0: its sign bit alone differs from 1.0
	VXORPS  Y14, Y15, Y15  // the sign bit

sigloop:
	LEAQ      8(DX), AX
	CMPQ      AX, CX
	JGT       sigdone
	VMOVUPS   (SI)(DX*4), Y13  // v
	VCMPPS    $3, Y13, Y13, Y1 // NaN
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       sigdone
	SIGMOID
	TESTQ     R9, R9
	JZ        sigout
	VMULPS    Y13, Y9, Y9 // SiLU: v times σ(v)

sigout:
	VMOVUPS   Y9, (DI)(DX*4)
	ADDQ      $8, DX
	JMP       sigloop

sigdone:
	VZEROUPPER
	MOVQ DX, ret+40(FP)
	RET

// Rows of tanhTab past expTab's (numeric_amd64.go).
#define TEN 544(R8)
#define SMALL 576(R8)
#define MTWO 608(R8)
#define T9 640(R8)
#define T7 672(R8)
#define T5 704(R8)
#define T3 736(R8)
#define T1 768(R8)

// func tanhAVX2(y, x *float32, n int, tab *[26][8]float32) int
//
// y[i] = tanhf(x[i]) (numeric.go) for i below the returned count (a
// multiple of 8 no larger than n), bit for bit: below |x| = 0.3 tanhf's
// series, in its order; above, (1-t)/(1+t) with t = expf(-2 min(|x|, 10))
// as expAVX2 computes it, x's sign put back; ±0 kept. It stops before the
// first 8 values holding a NaN (left to Go). y may be x.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-40
	MOVQ    y+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    tab+24(FP), R8
	XORQ    DX, DX
	VMOVUPS ONE, Y14
	VXORPS  Y15, Y15, Y15
	VSUBPS  Y14, Y15, Y15  // -1.0: its sign bit alone differs from 1.0
	VXORPS  Y14, Y15, Y15  // the sign bit

tanhloop:
	LEAQ      8(DX), AX
	CMPQ      AX, CX
	JGT       tanhdone
	VMOVUPS   (SI)(DX*4), Y13 // v
	VCMPPS    $3, Y13, Y13, Y1 // NaN
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       tanhdone
	VANDNPS   Y13, Y15, Y12    // a = |v|
	VMINPS    TEN, Y12, Y0
	VMULPS    MTWO, Y0, Y0     // -2 min(a, 10)

	EXPF // t

	VSUBPS    Y4, Y14, Y8      // 1 - t
	VADDPS    Y4, Y14, Y9      // 1 + t
	VDIVPS    Y9, Y8, Y8
	VANDPS    Y15, Y13, Y10
	VORPS     Y10, Y8, Y8      // (1-t)/(1+t), v's sign

	VMULPS    Y13, Y13, Y1     // z = v v
	VMULPS    T9, Y1, Y2
	VADDPS    T7, Y2, Y2
	VMULPS    Y1, Y2, Y2
	VADDPS    T5, Y2, Y2
	VMULPS    Y1, Y2, Y2
	VADDPS    T3, Y2, Y2
	VMULPS    Y1, Y2, Y2
	VADDPS    T1, Y2, Y2
	VMULPS    Y1, Y13, Y3      // v z
	VMULPS    Y2, Y3, Y3
	VADDPS    Y3, Y13, Y3      // v + v z p(z)

	VCMPPS    $1, SMALL, Y12, Y5 // a < 0.3
	VBLENDVPS Y5, Y3, Y8, Y8
	VXORPS    Y6, Y6, Y6
	VCMPPS    $0, Y6, Y12, Y5    // a == 0: v itself
	VBLENDVPS Y5, Y13, Y8, Y8
	VMOVUPS   Y8, (DI)(DX*4)
	ADDQ      $8, DX
	JMP       tanhloop

tanhdone:
	VZEROUPPER
	MOVQ DX, ret+32(FP)
	RET

// func geluTanhAVX2(y, x *float32, n int, tab *[17][8]float32, c, k float32) int
//
// Gelu's tanh form, y[i] = x σ(2u) = x σ(k (x + c x³)) (c 0.044715, k
// 2√(2/π)), for i below the returned count (a multiple of 8 no larger
// than n): the argument in unaryBlock32's order, σ as sigmoidAVX2 computes
// it, so the same bits as unaryBlock32. It stops before the first 8
// values holding a NaN (left to Go). y may be x.
TEXT ·geluTanhAVX2(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         tab+24(FP), R8
	VBROADCASTSS c+32(FP), Y11
	VBROADCASTSS k+36(FP), Y12
	XORQ         DX, DX
	VMOVUPS      ONE, Y14
	VXORPS       Y15, Y15, Y15
	VSUBPS       Y14, Y15, Y15 // -1.0: its sign bit alone differs from 1.0
	VXORPS       Y14, Y15, Y15 // the sign bit

gtloop:
	LEAQ      8(DX), AX
	CMPQ      AX, CX
	JGT       gtdone
	VMOVUPS   (SI)(DX*4), Y10 // v
	VCMPPS    $3, Y10, Y10, Y1 // NaN
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       gtdone
	VMULPS    Y11, Y10, Y13    // c v
	VMULPS    Y10, Y13, Y13
	VMULPS    Y10, Y13, Y13    // c v³
	VADDPS    Y13, Y10, Y13    // v + c v³
	VMULPS    Y12, Y13, Y13    // u
	SIGMOID
	VMULPS    Y9, Y10, Y9
	VMOVUPS   Y9, (DI)(DX*4)
	ADDQ      $8, DX
	JMP       gtloop

gtdone:
	VZEROUPPER
	MOVQ DX, ret+40(FP)
	RET

// func geluErfAVX2(y, x *float32, n int, tab *[36][8]float32, c, half float32, mode int)
//
// The fused GELU of the epilogues (geluErf.apply), 8 lanes, n a multiple
// of 8: d = x / c (mode bit 1) or x * c, then erff(d) + 1 = f, then (x *
// half) * f (mode bit 2) or (x * f) * half: the operations of the
// operators it replaces, in their order. y may be x.
TEXT ·geluErfAVX2(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         tab+24(FP), R8
	VBROADCASTSS c+32(FP), Y12
	VBROADCASTSS half+36(FP), Y13
	MOVQ         mode+40(FP), R9
	VMOVUPS      E_ABS, Y15

geluloop:
	CMPQ    CX, $8
	JLT     geludone
	VMOVUPS (SI), Y14
	TESTQ   $1, R9
	JZ      gelumul
	VDIVPS  Y12, Y14, Y0 // x / c
	JMP     geluerf

gelumul:
	VMULPS Y12, Y14, Y0 // x * c

geluerf:
	ERF
	VADDPS E_ONE, Y9, Y9 // f
	TESTQ  $2, R9
	JZ     gelulast
	VMULPS Y13, Y14, Y10 // x * half
	VMULPS Y9, Y10, Y9   // times f
	JMP    geluout

gelulast:
	VMULPS Y9, Y14, Y10 // x * f
	VMULPS Y13, Y10, Y9 // times half

geluout:
	VMOVUPS Y9, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     geluloop

geludone:
	VZEROUPPER
	RET
