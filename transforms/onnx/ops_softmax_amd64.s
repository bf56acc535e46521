//go:build !purego

#include "textflag.h"

// Softmax's row loops for float32 (ops_softmax.go): the largest value and
// the scaling by the sum's inverse, 8 lanes.

// func maxAVX2(x *float32, n int) (m float32, nan bool)
//
// The largest of x[i] for i < n (n a multiple of 8, at least 8), and
// whether one is NaN (then m is not defined). Two running maxima, 16
// values a step while there are.
TEXT ·maxAVX2(SB), NOSPLIT, $0-21
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS (SI), Y0
	VMOVAPS      Y0, Y1
	VXORPS       Y2, Y2, Y2 // NaN lanes seen
	VXORPS       Y3, Y3, Y3

mx16:
	CMPQ    CX, $16
	JLT     mx8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMAXPS  Y4, Y0, Y0
	VMAXPS  Y5, Y1, Y1
	VCMPPS  $3, Y4, Y4, Y6
	VCMPPS  $3, Y5, Y5, Y7
	VORPS   Y6, Y2, Y2
	VORPS   Y7, Y3, Y3
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     mx16

mx8:
	CMPQ    CX, $8
	JLT     mxdone
	VMOVUPS (SI), Y4
	VMAXPS  Y4, Y0, Y0
	VCMPPS  $3, Y4, Y4, Y6
	VORPS   Y6, Y2, Y2
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     mx8

mxdone:
	VMAXPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4E, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xB1, X0, X1
	VMAXPS       X1, X0, X0
	MOVSS        X0, m+16(FP)
	VORPS        Y3, Y2, Y2
	VMOVMSKPS    Y2, AX
	TESTL        AX, AX
	SETNE        nan+20(FP)
	VZEROUPPER
	RET

// func scaleAVX2(y *float32, n int, c float32, div bool)
//
// y[i] *= c (div: y[i] /= c) for i < n (n a multiple of 8, at least 8),
// each product or quotient rounded once.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-21
	MOVQ         y+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS c+16(FP), Y1
	MOVBLZX      div+20(FP), AX
	TESTL        AX, AX
	JNZ          sdloop

scloop:
	VMULPS  (DI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     scloop
	VZEROUPPER
	RET

sdloop:
	VMOVUPS (DI), Y0
	VDIVPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     sdloop
	VZEROUPPER
	RET
