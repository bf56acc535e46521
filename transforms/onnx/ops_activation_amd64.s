//go:build !purego

#include "textflag.h"

// Clip (opsets 6, 11, 12, 13) on float32: the AVX-512 kernel of
// ops_activation.go.

// func clampAVX512(y, x *float32, n int, lo, hi float32)
//
// y[i] = min(max(x[i], lo), hi) for i < n; a NaN x[i] stays NaN (VMAXPS and
// VMINPS return their second source, here x, when either is NaN). 64
// values a step, then 16, then the rest under a mask (lanes past n are
// neither read nor written).
TEXT ·clampAVX512(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS lo+24(FP), Z1
	VBROADCASTSS hi+28(FP), Z2

by64:
	CMPQ    CX, $64
	JLT     by16
	VMOVUPS (SI), Z3
	VMOVUPS 64(SI), Z4
	VMOVUPS 128(SI), Z5
	VMOVUPS 192(SI), Z6
	VMAXPS  Z3, Z1, Z3
	VMAXPS  Z4, Z1, Z4
	VMAXPS  Z5, Z1, Z5
	VMAXPS  Z6, Z1, Z6
	VMINPS  Z3, Z2, Z3
	VMINPS  Z4, Z2, Z4
	VMINPS  Z5, Z2, Z5
	VMINPS  Z6, Z2, Z6
	VMOVUPS Z3, (DI)
	VMOVUPS Z4, 64(DI)
	VMOVUPS Z5, 128(DI)
	VMOVUPS Z6, 192(DI)
	ADDQ    $256, SI
	ADDQ    $256, DI
	SUBQ    $64, CX
	JMP     by64

by16:
	CMPQ    CX, $16
	JLT     rest
	VMOVUPS (SI), Z3
	VMAXPS  Z3, Z1, Z3
	VMINPS  Z3, Z2, Z3
	VMOVUPS Z3, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     by16

rest:
	TESTQ     CX, CX
	JZ        done
	MOVQ      $1, AX
	SHLQ      CX, AX
	DECQ      AX
	KMOVW     AX, K1
	VMOVUPS.Z (SI), K1, Z3
	VMAXPS    Z3, Z1, Z3
	VMINPS    Z3, Z2, Z3
	VMOVUPS   Z3, K1, (DI)

done:
	VZEROUPPER
	RET

// func clampAVX2(y, x *float32, n int, lo, hi float32, mask *int32)
//
// clampAVX512 for AVX2: 32 values a step, then 8, then the rest under the
// mask of their lanes (mask points to 8 int32s, all ones on the first
// n%8 lanes).
TEXT ·clampAVX2(SB), NOSPLIT, $0-40
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS lo+24(FP), Y1
	VBROADCASTSS hi+28(FP), Y2

cby32:
	CMPQ    CX, $32
	JLT     cby8
	VMOVUPS (SI), Y3
	VMOVUPS 32(SI), Y4
	VMOVUPS 64(SI), Y5
	VMOVUPS 96(SI), Y6
	VMAXPS  Y3, Y1, Y3
	VMAXPS  Y4, Y1, Y4
	VMAXPS  Y5, Y1, Y5
	VMAXPS  Y6, Y1, Y6
	VMINPS  Y3, Y2, Y3
	VMINPS  Y4, Y2, Y4
	VMINPS  Y5, Y2, Y5
	VMINPS  Y6, Y2, Y6
	VMOVUPS Y3, (DI)
	VMOVUPS Y4, 32(DI)
	VMOVUPS Y5, 64(DI)
	VMOVUPS Y6, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     cby32

cby8:
	CMPQ    CX, $8
	JLT     crest
	VMOVUPS (SI), Y3
	VMAXPS  Y3, Y1, Y3
	VMINPS  Y3, Y2, Y3
	VMOVUPS Y3, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     cby8

crest:
	TESTQ      CX, CX
	JZ         cdone
	MOVQ       mask+32(FP), AX
	VMOVDQU    (AX), Y7
	VMASKMOVPS (SI), Y7, Y3
	VMAXPS     Y3, Y1, Y3
	VMINPS     Y3, Y2, Y3
	VMASKMOVPS Y3, Y7, (DI)

cdone:
	VZEROUPPER
	RET

// func hardAVX2(y, x *float32, n int, alpha, beta float32, swish int, mask *int32)
//
// HardSigmoid, y[i] = min(max(alpha*x[i] + beta, 0), 1), and with swish !=
// 0 HardSwish, y[i] = x[i] * that: a product and a sum each rounded (no
// FMA: the same bits as Go's loop), NaN kept (VMAXPS and VMINPS return
// their second source when either is NaN, and -0 when both are zeros). 8
// values a step, then the rest under mask (8 int32s, all ones on the
// first n%8 lanes). AVX-512 machines run it too (no 16-lane version: the
// project's machines have had none to test one on).
TEXT ·hardAVX2(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y1
	VBROADCASTSS beta+28(FP), Y2
	MOVQ         swish+32(FP), DX
	VXORPS       Y8, Y8, Y8 // 0
	MOVL         $0x3f800000, AX
	MOVQ         AX, X9
	VBROADCASTSS X9, Y9 // 1

gby8:
	CMPQ    CX, $8
	JLT     grest
	VMOVUPS (SI), Y3
	VMULPS  Y1, Y3, Y4
	VADDPS  Y2, Y4, Y4
	VMAXPS  Y4, Y8, Y4
	VMINPS  Y4, Y9, Y4
	TESTQ   DX, DX
	JZ      gstore8
	VMULPS  Y4, Y3, Y4

gstore8:
	VMOVUPS Y4, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     gby8

grest:
	TESTQ      CX, CX
	JZ         gdone
	MOVQ       mask+40(FP), AX
	VMOVDQU    (AX), Y7
	VMASKMOVPS (SI), Y7, Y3
	VMULPS     Y1, Y3, Y4
	VADDPS     Y2, Y4, Y4
	VMAXPS     Y4, Y8, Y4
	VMINPS     Y4, Y9, Y4
	TESTQ      DX, DX
	JZ         gstorer
	VMULPS     Y4, Y3, Y4

gstorer:
	VMASKMOVPS Y4, Y7, (DI)

gdone:
	VZEROUPPER
	RET

// func softsignAVX2(y, x *float32, n int)
//
// Softsign, y[i] = x[i] / (1 + |x[i]|) in float32 (the sum and the
// quotient each rounded, as Go's loop and ONNX Runtime compute it), for
// i < n, n a multiple of 8. NaN stays NaN.
TEXT ·softsignAVX2(SB), NOSPLIT, $0-24
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVL         $0x3f800000, AX
	MOVQ         AX, X9
	VBROADCASTSS X9, Y9  // 1
	MOVL         $0x7fffffff, AX
	MOVQ         AX, X8
	VBROADCASTSS X8, Y8  // |.|'s mask

sby16:
	CMPQ    CX, $16
	JLT     sby8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VANDPS  Y8, Y0, Y2
	VANDPS  Y8, Y1, Y3
	VADDPS  Y9, Y2, Y2
	VADDPS  Y9, Y3, Y3
	VDIVPS  Y2, Y0, Y0
	VDIVPS  Y3, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     sby16

sby8:
	CMPQ    CX, $8
	JLT     sdone
	VMOVUPS (SI), Y0
	VANDPS  Y8, Y0, Y2
	VADDPS  Y9, Y2, Y2
	VDIVPS  Y2, Y0, Y0
	VMOVUPS Y0, (DI)

sdone:
	VZEROUPPER
	RET

// func threshAVX2(y, x *float32, n int, alpha float32)
//
// ThresholdedRelu, y[i] = x[i] where x[i] > alpha or x[i] is NaN, else
// +0, for i < n, n a multiple of 8.
TEXT ·threshAVX2(SB), NOSPLIT, $0-28
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y9

tby32:
	CMPQ    CX, $32
	JLT     tby8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VCMPPS  $6, Y9, Y0, Y4 // !(x <= alpha): over, or NaN
	VCMPPS  $6, Y9, Y1, Y5
	VCMPPS  $6, Y9, Y2, Y6
	VCMPPS  $6, Y9, Y3, Y7
	VANDPS  Y4, Y0, Y0
	VANDPS  Y5, Y1, Y1
	VANDPS  Y6, Y2, Y2
	VANDPS  Y7, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     tby32

tby8:
	CMPQ    CX, $8
	JLT     tdone
	VMOVUPS (SI), Y0
	VCMPPS  $6, Y9, Y0, Y4
	VANDPS  Y4, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     tby8

tdone:
	VZEROUPPER
	RET

#define ROUNDLOOP(imm, loop, done) \
loop: \
	CMPQ     CX, $16 \
	JLT      done \
	VROUNDPS imm, (SI), Y0 \
	VROUNDPS imm, 32(SI), Y1 \
	VMOVUPS  Y0, (DI) \
	VMOVUPS  Y1, 32(DI) \
	ADDQ     $64, SI \
	ADDQ     $64, DI \
	SUBQ     $16, CX \
	JMP      loop \
done: \
	CMPQ     CX, $8 \
	JLT      rdone \
	VROUNDPS imm, (SI), Y0 \
	VMOVUPS  Y0, (DI) \
	JMP      rdone

// func roundAVX2(y, x *float32, n int, mode int)
//
// Round (mode 0: to the nearest, ties to even), Floor (1) and Ceil (2):
// y[i] = x[i] rounded to an integer for i < n, n a multiple of 8, with
// VROUNDPS (exact; ±0, ±Inf and NaN kept), the bits of math's float64
// functions.
TEXT ·roundAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ mode+24(FP), AX
	CMPQ AX, $1
	JEQ  rfloor
	CMPQ AX, $2
	JEQ  rceil
	ROUNDLOOP($8, rnear, rnear8)

rfloor:
	ROUNDLOOP($9, rfloor16, rfloor8)

rceil:
	ROUNDLOOP($10, rceil16, rceil8)

rdone:
	VZEROUPPER
	RET

// func addAVX2(y, z *float32, n int)
//
// y[i] += z[i] for i < n, n a multiple of 8 (a fused epilogue's residual).
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ z+8(FP), SI
	MOVQ n+16(FP), CX

aby32:
	CMPQ    CX, $32
	JLT     aby8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  (SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     aby32

aby8:
	CMPQ    CX, $8
	JLT     abdone
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     aby8

abdone:
	VZEROUPPER
	RET

// func preluAVX2(y, x *float32, n int, s float32)
//
// PRelu of one slope: y[i] = s x[i] where x[i] < 0, else x[i] (NaN and -0
// kept), for i < n, n a multiple of 8.
TEXT ·preluAVX2(SB), NOSPLIT, $0-28
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS s+24(FP), Y9
	VXORPS       Y8, Y8, Y8

pby16:
	CMPQ      CX, $16
	JLT       pby8
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VCMPPS    $1, Y8, Y0, Y2 // x < 0
	VCMPPS    $1, Y8, Y1, Y3
	VMULPS    Y9, Y0, Y4
	VMULPS    Y9, Y1, Y5
	VBLENDVPS Y2, Y4, Y0, Y0
	VBLENDVPS Y3, Y5, Y1, Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       pby16

pby8:
	CMPQ      CX, $8
	JLT       pdone
	VMOVUPS   (SI), Y0
	VCMPPS    $1, Y8, Y0, Y2
	VMULPS    Y9, Y0, Y4
	VBLENDVPS Y2, Y4, Y0, Y0
	VMOVUPS   Y0, (DI)

pdone:
	VZEROUPPER
	RET
