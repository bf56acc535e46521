//go:build !purego

#include "textflag.h"

// func accF32AVX2(acc *float64, x *float32, n int)
//
// acc[i] += float64(x[i]) for i < n (a multiple of 8): ReduceSum's and
// ReduceMean's float64 accumulators over a reduced axis, each element's
// conversion and sum as Go's loop does them.
TEXT ·accF32AVX2(SB), NOSPLIT, $0-24
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

aloop:
	CMPQ      CX, $8
	JLT       adone
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VADDPD    (DI), Y0, Y0
	VADDPD    32(DI), Y1, Y1
	VMOVUPD   Y0, (DI)
	VMOVUPD   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $8, CX
	JMP       aloop

adone:
	VZEROUPPER
	RET
