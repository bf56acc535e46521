//go:build !purego

#include "textflag.h"

// The blocked layout's loops over runs of 16-float pixels (plan_layout.go),
// AVX2.

// SUM_PIXEL adds the 16 floats at SI, in float64, to Y0-Y3 (lanes 0-3,
// 4-7, 8-11, 12-15) and steps SI to the next pixel.
#define SUM_PIXEL \
	VCVTPS2PD (SI), Y4 \
	VCVTPS2PD 16(SI), Y5 \
	VCVTPS2PD 32(SI), Y6 \
	VCVTPS2PD 48(SI), Y7 \
	VADDPD    Y4, Y0, Y0 \
	VADDPD    Y5, Y1, Y1 \
	VADDPD    Y6, Y2, Y2 \
	VADDPD    Y7, Y3, Y3 \
	ADDQ      $64, SI

// func blockSumAVX2(x *float32, n int, acc *float64)
//
// acc[l] += Σ x[i*16 + l] for i < n, l < 16, in float64, a pixel at a time
// in order.
TEXT ·blockSumAVX2(SB), NOSPLIT, $0-24
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    acc+16(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	TESTQ   CX, CX
	JZ      bsdone

bsloop:
	SUM_PIXEL
	DECQ      CX
	JNZ       bsloop

bsdone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func blockScaleAVX2(y, x *float32, n int, s *float32)
//
// y[i*16 + l] = x[i*16 + l] * s[l] for i < n, l < 16. y may be x.
TEXT ·blockScaleAVX2(SB), NOSPLIT, $0-32
	MOVQ    y+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    s+24(FP), DX
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	TESTQ   CX, CX
	JZ      scdone

scloop:
	VMULPS  (SI), Y0, Y2
	VMULPS  32(SI), Y1, Y3
	VMOVUPS Y2, (DI)
	VMOVUPS Y3, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     scloop

scdone:
	VZEROUPPER
	RET

// func blockMeanAVX2(y, x *float32, n int, div float64)
//
// y[l] = float32((Σ x[i*16 + l] for i < n, in float64, a pixel at a time
// in order) / div) for l < 16: blockSumAVX2's sums from zero, divided and
// rounded as Go's float32(acc / div).
TEXT ·blockMeanAVX2(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD div+24(FP), Y8
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3
	TESTQ        CX, CX
	JZ           bmdone

bmloop:
	SUM_PIXEL
	DECQ      CX
	JNZ       bmloop

bmdone:
	VDIVPD     Y8, Y0, Y0
	VDIVPD     Y8, Y1, Y1
	VDIVPD     Y8, Y2, Y2
	VDIVPD     Y8, Y3, Y3
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VCVTPD2PSY Y2, X2
	VCVTPD2PSY Y3, X3
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	VMOVUPS    X2, 32(DI)
	VMOVUPS    X3, 48(DI)
	VZEROUPPER
	RET
