//go:build !purego

#include "textflag.h"

// func addPairsAVX2(d, a, b *float32, n int)
//
// d[2i] += a[i], d[2i+1] += b[i] for i < n (a multiple of 8): 8 of a and
// 8 of b interleaved (unpack, then the 128-bit halves put in order) and
// added to 16 of d.
TEXT ·addPairsAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX

pairloop:
	CMPQ       CX, $8
	JLT        pairdone
	VMOVUPS    (SI), Y0
	VMOVUPS    (DX), Y1
	VUNPCKLPS  Y1, Y0, Y2        // a0 b0 a1 b1 | a4 b4 a5 b5
	VUNPCKHPS  Y1, Y0, Y3        // a2 b2 a3 b3 | a6 b6 a7 b7
	VPERM2F128 $0x20, Y3, Y2, Y4 // a0 b0 a1 b1 a2 b2 a3 b3
	VPERM2F128 $0x31, Y3, Y2, Y5 // a4 b4 a5 b5 a6 b6 a7 b7
	VADDPS     (DI), Y4, Y4
	VADDPS     32(DI), Y5, Y5
	VMOVUPS    Y4, (DI)
	VMOVUPS    Y5, 32(DI)
	ADDQ       $32, SI
	ADDQ       $32, DX
	ADDQ       $64, DI
	SUBQ       $8, CX
	JMP        pairloop

pairdone:
	VZEROUPPER
	RET
