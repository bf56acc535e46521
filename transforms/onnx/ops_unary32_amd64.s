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
