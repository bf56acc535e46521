//go:build !purego

#include "textflag.h"

// func compositeAVX512(pix *uint8, red, green, blue *float32, n int, tabs *[3]*levelsVec)
//
// The composite of n pixels (a multiple of 16), 16 a step, with the level
// tables of the three channels: per channel d = v - lo, bucket
// i = clamp(int(d*scale), 0, B-1) (truncation, as Go's conversion), level =
// base[i] + (d >= next[i]) from two gathers, 255 where d >= h, 0 where
// !(d > 0); then the RGBA word, transparent black where a channel is NaN.
// It is levels.level per channel, for tables without multi buckets.

// levelsVec layout: lo+0, h+4, scale+8, then from +16 one uint64 per bucket
// (B of them): the float32 bits of next in the low half, base in the high.
#define B 4096

// LEVEL16(v, tab, out): the levels of the 16 values in v, with the table at
// tab (a register). Each bucket's next and base come in one 8-byte gather
// element (two gathers of 8 for 16 lanes), split into even dwords (next)
// and odd dwords (base) by two permutes with the index vectors Z18 and Z19.
// Z20-Z26 and K2-K6 are scratch.
#define LEVEL16(v, tab, out) \
	VBROADCASTSS 0(tab), Z20; \
	VSUBPS Z20, v, Z21; \
	VBROADCASTSS 8(tab), Z20; \
	VMULPS Z20, Z21, Z22; \
	VCVTTPS2DQ Z22, Z22; \
	VPMINSD Z27, Z22, Z22; \
	VPMAXSD Z28, Z22, Z22; \
	VEXTRACTI64X4 $1, Z22, Y24; \
	KXNORW K0, K0, K2; \
	VPGATHERDQ 16(tab)(Y22*8), K2, Z23; \
	KXNORW K0, K0, K3; \
	VPGATHERDQ 16(tab)(Y24*8), K3, Z25; \
	VMOVDQA32 Z18, Z26; \
	VPERMI2D Z25, Z23, Z26; \
	VMOVDQA32 Z19, out; \
	VPERMI2D Z25, Z23, out; \
	VCMPPS $0x1d, Z26, Z21, K4; \
	VPADDD Z29, out, K4, out; \
	VBROADCASTSS 4(tab), Z20; \
	VCMPPS $0x1d, Z20, Z21, K5; \
	VMOVDQA32 Z30, K5, out; \
	VCMPPS $0x1e, Z28, Z21, K6; \
	VMOVDQA32.Z out, K6, out

// Permutation indices: even dwords (0, 2, ..., 30) and odd ones.
DATA evenOdd<>+0(SB)/4, $0
DATA evenOdd<>+4(SB)/4, $2
DATA evenOdd<>+8(SB)/4, $4
DATA evenOdd<>+12(SB)/4, $6
DATA evenOdd<>+16(SB)/4, $8
DATA evenOdd<>+20(SB)/4, $10
DATA evenOdd<>+24(SB)/4, $12
DATA evenOdd<>+28(SB)/4, $14
DATA evenOdd<>+32(SB)/4, $16
DATA evenOdd<>+36(SB)/4, $18
DATA evenOdd<>+40(SB)/4, $20
DATA evenOdd<>+44(SB)/4, $22
DATA evenOdd<>+48(SB)/4, $24
DATA evenOdd<>+52(SB)/4, $26
DATA evenOdd<>+56(SB)/4, $28
DATA evenOdd<>+60(SB)/4, $30
GLOBL evenOdd<>(SB), RODATA|NOPTR, $64

TEXT ·compositeAVX512(SB), NOSPLIT, $0-48
	MOVQ pix+0(FP), DI
	MOVQ red+8(FP), R8
	MOVQ green+16(FP), R9
	MOVQ blue+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ tabs+40(FP), AX
	MOVQ 0(AX), R11
	MOVQ 8(AX), R12
	MOVQ 16(AX), R13
	MOVL $(B-1), AX
	VPBROADCASTD AX, Z27
	VPXORD Z28, Z28, Z28
	MOVL $1, AX
	VPBROADCASTD AX, Z29
	MOVL $255, AX
	VPBROADCASTD AX, Z30
	MOVL $0xff000000, AX
	VPBROADCASTD AX, Z31
	VMOVDQU32 evenOdd<>(SB), Z18
	VPADDD Z29, Z18, Z19
	XORQ AX, AX
	TESTQ CX, CX
	JLE done
loop:
	VMOVUPS (R8)(AX*4), Z0
	VMOVUPS (R9)(AX*4), Z1
	VMOVUPS (R10)(AX*4), Z2
	// K1: lanes where no channel is NaN
	VCMPPS $7, Z0, Z0, K1
	VCMPPS $7, Z1, Z1, K7
	KANDW K7, K1, K1
	VCMPPS $7, Z2, Z2, K7
	KANDW K7, K1, K1
	LEVEL16(Z0, R11, Z3)
	LEVEL16(Z1, R12, Z4)
	LEVEL16(Z2, R13, Z5)
	VPSLLD $8, Z4, Z4
	VPSLLD $16, Z5, Z5
	VPORD Z4, Z3, Z3
	VPORD Z5, Z3, Z3
	VPORD Z31, Z3, Z3
	VMOVDQA32.Z Z3, K1, Z3
	VMOVDQU32 Z3, (DI)(AX*4)
	ADDQ $16, AX
	CMPQ AX, CX
	JLT loop
done:
	VZEROUPPER
	RET
