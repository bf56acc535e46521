//go:build !purego

#include "textflag.h"

// func fmodAVX2(z, x, y *float32, n int, tab *[4][4]uint64) int
//
// z[i] = fmod32(x[i], y[i]) (ops_mod.go), the same bits, for i below the
// returned count (a multiple of 4 no larger than n), 4 values a step in
// float64: q = trunc(x / y), r = x - q y (exact: q has at most 24 bits),
// r given x's sign (fmod's, and -0 for a zero r of a negative x). It stops
// before the first 4 values where fmod32 does more (a quotient of 2^24 or
// more, NaN or ±Inf; y zero or ±Inf; a quotient's rounding that crossed an
// integer, so that r needs fmod32's correction), and leaves them to Go.
// tab holds 4 copies each of |.|'s mask, the sign bit, 2^24 and +Inf.
TEXT ·fmodAVX2(SB), NOSPLIT, $0-48
	MOVQ    z+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    y+16(FP), BX
	MOVQ    n+24(FP), CX
	MOVQ    tab+32(FP), R8
	VMOVUPD 0(R8), Y15  // |.|
	VMOVUPD 32(R8), Y14 // the sign bit
	VMOVUPD 64(R8), Y13 // 2^24
	VMOVUPD 96(R8), Y12 // +Inf
	VXORPD  Y11, Y11, Y11
	XORQ    DX, DX

floop:
	LEAQ      4(DX), AX
	CMPQ      AX, CX
	JGT       fdone
	VCVTPS2PD (SI)(DX*4), Y0 // x
	VCVTPS2PD (BX)(DX*4), Y1 // y
	VDIVPD    Y1, Y0, Y2
	VROUNDPD  $3, Y2, Y2     // q = trunc(x / y)
	VMULPD    Y1, Y2, Y3
	VSUBPD    Y3, Y0, Y3     // r = x - q y

	VANDPD  Y15, Y2, Y4
	VCMPPD  $1, Y13, Y4, Y4 // |q| < 2^24 (false for NaN)
	VANDPD  Y15, Y1, Y5     // |y|
	VCMPPD  $1, Y12, Y5, Y6 // |y| < Inf
	VANDPD  Y6, Y4, Y4
	VANDPD  Y15, Y3, Y7     // |r|
	VCMPPD  $1, Y5, Y7, Y6  // |r| < |y|
	VANDPD  Y6, Y4, Y4
	VCMPPD  $4, Y11, Y7, Y6 // r != 0
	VXORPD  Y0, Y3, Y8
	VANDPD  Y6, Y8, Y8      // the sign bit where r is not 0 and its sign is not x's
	VMOVMSKPD Y4, AX
	VMOVMSKPD Y8, R9
	XORL    $15, AX
	ORL     R9, AX
	JNZ     fdone

	VANDPD     Y14, Y0, Y8
	VORPD      Y8, Y7, Y7   // |r| with x's sign
	VCVTPD2PSY Y7, X7
	VMOVUPS    X7, (DI)(DX*4)
	ADDQ       $4, DX
	JMP        floop

fdone:
	VZEROUPPER
	MOVQ DX, ret+40(FP)
	RET
