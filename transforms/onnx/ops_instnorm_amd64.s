//go:build !purego

#include "textflag.h"

// The normalizations' float64 loops over float32 values (ops_instnorm.go),
// 8 values a step as two vectors of 4 float64s, no FMA.

// func sumAVX2(v *float32, n int) float64
//
// Σ v[i] for i < n (n a multiple of 8) in float64, in 8 running partial
// sums (two vectors), added pairwise at the end.
TEXT ·sumAVX2(SB), NOSPLIT, $0-24
	MOVQ   v+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1

sloop:
	CMPQ      CX, $8
	JLT       sdone
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VADDPD    Y2, Y0, Y0
	VADDPD    Y3, Y1, Y1
	ADDQ      $32, SI
	SUBQ      $8, CX
	JMP       sloop

sdone:
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VPERMILPD    $1, X0, X1
	VADDSD       X1, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+16(FP)
	RET

// func sqDevAVX2(v *float32, n int, mean float64) float64
//
// Σ (v[i] - mean)² for i < n (n a multiple of 8) in float64, each product
// and sum rounded, in 8 running partial sums.
TEXT ·sqDevAVX2(SB), NOSPLIT, $0-32
	MOVQ         v+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD mean+16(FP), Y4
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1

qloop:
	CMPQ      CX, $8
	JLT       qdone
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VSUBPD    Y4, Y2, Y2
	VSUBPD    Y4, Y3, Y3
	VMULPD    Y2, Y2, Y2
	VMULPD    Y3, Y3, Y3
	VADDPD    Y2, Y0, Y0
	VADDPD    Y3, Y1, Y1
	ADDQ      $32, SI
	SUBQ      $8, CX
	JMP       qloop

qdone:
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VPERMILPD    $1, X0, X1
	VADDSD       X1, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+24(FP)
	RET

// func affineAVX2(y, x *float32, n int, mean, a, b float64)
//
// y[i] = float32((x[i] - mean) a + b) for i < n (n a multiple of 8), in
// float64 with each step rounded: the bits of Go's loop.
TEXT ·affineAVX2(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD mean+24(FP), Y4
	VBROADCASTSD a+32(FP), Y5
	VBROADCASTSD b+40(FP), Y6

aloop:
	CMPQ       CX, $8
	JLT        adone
	VCVTPS2PD  (SI), Y2
	VCVTPS2PD  16(SI), Y3
	VSUBPD     Y4, Y2, Y2
	VSUBPD     Y4, Y3, Y3
	VMULPD     Y5, Y2, Y2
	VMULPD     Y5, Y3, Y3
	VADDPD     Y6, Y2, Y2
	VADDPD     Y6, Y3, Y3
	VCVTPD2PSY Y2, X2
	VCVTPD2PSY Y3, X3
	VMOVUPS    X2, (DI)
	VMOVUPS    X3, 16(DI)
	ADDQ       $32, SI
	ADDQ       $32, DI
	SUBQ       $8, CX
	JMP        aloop

adone:
	VZEROUPPER
	RET

// func normRowAVX2(y, x, scale, bias *float32, n int, m, iv float32)
//
// LayerNormalization's last step over a row (normRow): y[i] = (x[i] - m) *
// iv * scale[i] (+ bias[i] where bias is not nil), each operation rounded
// to float32 in that order (no FMA), n a multiple of 8. y may be x.
TEXT ·normRowAVX2(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         scale+16(FP), DX
	MOVQ         bias+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSS m+40(FP), Y4
	VBROADCASTSS iv+44(FP), Y5
	XORQ         AX, AX

nloop:
	CMPQ    AX, CX
	JGE     ndone
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y4, Y0, Y0
	VMULPS  Y5, Y0, Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	TESTQ   BX, BX
	JZ      nstore
	VADDPS  (BX)(AX*4), Y0, Y0

nstore:
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     nloop

ndone:
	VZEROUPPER
	RET
