//go:build !purego

#include "textflag.h"

// func packRowsAVX512(dst, src *float32, ldb, steps, lines, w, stride int)
//
// Packs the rows of a row-major A into a micro-panel of w <= 16 rows:
// dst[p*stride + r] = src[r*ld + p] (ldb = ld in bytes) for p < steps (a
// multiple of 16) and r < lines, 0 for lines <= r < w (every row when lines
// is 0: src is not read). 16 steps at a time: the 16 rows' 16 values loaded
// (rows past lines zero), transposed in registers (unpack by 32 then 64
// bits, then 128-bit lanes shuffled), each step's w values stored under a
// mask, stride floats after the last step's (a panel of 32 rows packs its
// halves with two calls).
TEXT ·packRowsAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldb+16(FP), BX
	MOVQ steps+24(FP), CX
	MOVQ lines+32(FP), DX
	MOVQ w+40(FP), R9
	MOVQ CX, R13 // steps
	MOVQ R9, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1 // the w lanes of a step
	MOVQ R13, CX
	MOVQ stride+48(FP), R9
	SHLQ $2, R9  // a step's bytes in dst
	MOVQ R9, R11
	SHLQ $2, R11 // four steps' bytes

prloop:
	CMPQ CX, $16
	JLT prdone
	MOVQ SI, R8
	CMPQ DX, $0
	JLE przero0
	VMOVUPS (R8), Z0
	CMPQ DX, $1
	JLE przero1
	ADDQ BX, R8
	VMOVUPS (R8), Z1
	CMPQ DX, $2
	JLE przero2
	ADDQ BX, R8
	VMOVUPS (R8), Z2
	CMPQ DX, $3
	JLE przero3
	ADDQ BX, R8
	VMOVUPS (R8), Z3
	CMPQ DX, $4
	JLE przero4
	ADDQ BX, R8
	VMOVUPS (R8), Z4
	CMPQ DX, $5
	JLE przero5
	ADDQ BX, R8
	VMOVUPS (R8), Z5
	CMPQ DX, $6
	JLE przero6
	ADDQ BX, R8
	VMOVUPS (R8), Z6
	CMPQ DX, $7
	JLE przero7
	ADDQ BX, R8
	VMOVUPS (R8), Z7
	CMPQ DX, $8
	JLE przero8
	ADDQ BX, R8
	VMOVUPS (R8), Z8
	CMPQ DX, $9
	JLE przero9
	ADDQ BX, R8
	VMOVUPS (R8), Z9
	CMPQ DX, $10
	JLE przero10
	ADDQ BX, R8
	VMOVUPS (R8), Z10
	CMPQ DX, $11
	JLE przero11
	ADDQ BX, R8
	VMOVUPS (R8), Z11
	CMPQ DX, $12
	JLE przero12
	ADDQ BX, R8
	VMOVUPS (R8), Z12
	CMPQ DX, $13
	JLE przero13
	ADDQ BX, R8
	VMOVUPS (R8), Z13
	CMPQ DX, $14
	JLE przero14
	ADDQ BX, R8
	VMOVUPS (R8), Z14
	CMPQ DX, $15
	JLE przero15
	ADDQ BX, R8
	VMOVUPS (R8), Z15
	JMP prtranspose
przero0:
	VPXORD Z0, Z0, Z0
przero1:
	VPXORD Z1, Z1, Z1
przero2:
	VPXORD Z2, Z2, Z2
przero3:
	VPXORD Z3, Z3, Z3
przero4:
	VPXORD Z4, Z4, Z4
przero5:
	VPXORD Z5, Z5, Z5
przero6:
	VPXORD Z6, Z6, Z6
przero7:
	VPXORD Z7, Z7, Z7
przero8:
	VPXORD Z8, Z8, Z8
przero9:
	VPXORD Z9, Z9, Z9
przero10:
	VPXORD Z10, Z10, Z10
przero11:
	VPXORD Z11, Z11, Z11
przero12:
	VPXORD Z12, Z12, Z12
przero13:
	VPXORD Z13, Z13, Z13
przero14:
	VPXORD Z14, Z14, Z14
przero15:
	VPXORD Z15, Z15, Z15

prtranspose:
	VUNPCKLPS Z1, Z0, Z16
	VUNPCKHPS Z1, Z0, Z17
	VUNPCKLPS Z3, Z2, Z18
	VUNPCKHPS Z3, Z2, Z19
	VUNPCKLPS Z5, Z4, Z20
	VUNPCKHPS Z5, Z4, Z21
	VUNPCKLPS Z7, Z6, Z22
	VUNPCKHPS Z7, Z6, Z23
	VUNPCKLPS Z9, Z8, Z24
	VUNPCKHPS Z9, Z8, Z25
	VUNPCKLPS Z11, Z10, Z26
	VUNPCKHPS Z11, Z10, Z27
	VUNPCKLPS Z13, Z12, Z28
	VUNPCKHPS Z13, Z12, Z29
	VUNPCKLPS Z15, Z14, Z30
	VUNPCKHPS Z15, Z14, Z31
	VUNPCKLPD Z18, Z16, Z0
	VUNPCKHPD Z18, Z16, Z1
	VUNPCKLPD Z19, Z17, Z2
	VUNPCKHPD Z19, Z17, Z3
	VUNPCKLPD Z22, Z20, Z4
	VUNPCKHPD Z22, Z20, Z5
	VUNPCKLPD Z23, Z21, Z6
	VUNPCKHPD Z23, Z21, Z7
	VUNPCKLPD Z26, Z24, Z8
	VUNPCKHPD Z26, Z24, Z9
	VUNPCKLPD Z27, Z25, Z10
	VUNPCKHPD Z27, Z25, Z11
	VUNPCKLPD Z30, Z28, Z12
	VUNPCKHPD Z30, Z28, Z13
	VUNPCKLPD Z31, Z29, Z14
	VUNPCKHPD Z31, Z29, Z15
	// Z(4g+c) holds, in its 128-bit lane L, rows 4g..4g+3 of step 4L+c.
	MOVQ DI, R10
	VSHUFF32X4 $0x44, Z4, Z0, Z16
	VSHUFF32X4 $0xEE, Z4, Z0, Z17
	VSHUFF32X4 $0x44, Z12, Z8, Z18
	VSHUFF32X4 $0xEE, Z12, Z8, Z19
	VSHUFF32X4 $0x88, Z18, Z16, Z20 // step c
	VSHUFF32X4 $0xDD, Z18, Z16, Z21 // step 4+c
	VSHUFF32X4 $0x88, Z19, Z17, Z22 // step 8+c
	VSHUFF32X4 $0xDD, Z19, Z17, Z23 // step 12+c
	LEAQ (R10)(R11*2), R12
	VMOVUPS Z20, K1, (R10)
	VMOVUPS Z21, K1, (R10)(R11*1)
	VMOVUPS Z22, K1, (R12)
	VMOVUPS Z23, K1, (R12)(R11*1)
	ADDQ R9, R10
	VSHUFF32X4 $0x44, Z5, Z1, Z16
	VSHUFF32X4 $0xEE, Z5, Z1, Z17
	VSHUFF32X4 $0x44, Z13, Z9, Z18
	VSHUFF32X4 $0xEE, Z13, Z9, Z19
	VSHUFF32X4 $0x88, Z18, Z16, Z20 // step c
	VSHUFF32X4 $0xDD, Z18, Z16, Z21 // step 4+c
	VSHUFF32X4 $0x88, Z19, Z17, Z22 // step 8+c
	VSHUFF32X4 $0xDD, Z19, Z17, Z23 // step 12+c
	LEAQ (R10)(R11*2), R12
	VMOVUPS Z20, K1, (R10)
	VMOVUPS Z21, K1, (R10)(R11*1)
	VMOVUPS Z22, K1, (R12)
	VMOVUPS Z23, K1, (R12)(R11*1)
	ADDQ R9, R10
	VSHUFF32X4 $0x44, Z6, Z2, Z16
	VSHUFF32X4 $0xEE, Z6, Z2, Z17
	VSHUFF32X4 $0x44, Z14, Z10, Z18
	VSHUFF32X4 $0xEE, Z14, Z10, Z19
	VSHUFF32X4 $0x88, Z18, Z16, Z20 // step c
	VSHUFF32X4 $0xDD, Z18, Z16, Z21 // step 4+c
	VSHUFF32X4 $0x88, Z19, Z17, Z22 // step 8+c
	VSHUFF32X4 $0xDD, Z19, Z17, Z23 // step 12+c
	LEAQ (R10)(R11*2), R12
	VMOVUPS Z20, K1, (R10)
	VMOVUPS Z21, K1, (R10)(R11*1)
	VMOVUPS Z22, K1, (R12)
	VMOVUPS Z23, K1, (R12)(R11*1)
	ADDQ R9, R10
	VSHUFF32X4 $0x44, Z7, Z3, Z16
	VSHUFF32X4 $0xEE, Z7, Z3, Z17
	VSHUFF32X4 $0x44, Z15, Z11, Z18
	VSHUFF32X4 $0xEE, Z15, Z11, Z19
	VSHUFF32X4 $0x88, Z18, Z16, Z20 // step c
	VSHUFF32X4 $0xDD, Z18, Z16, Z21 // step 4+c
	VSHUFF32X4 $0x88, Z19, Z17, Z22 // step 8+c
	VSHUFF32X4 $0xDD, Z19, Z17, Z23 // step 12+c
	LEAQ (R10)(R11*2), R12
	VMOVUPS Z20, K1, (R10)
	VMOVUPS Z21, K1, (R10)(R11*1)
	VMOVUPS Z22, K1, (R12)
	VMOVUPS Z23, K1, (R12)(R11*1)
	ADDQ $64, SI
	LEAQ (DI)(R11*4), DI // 16 steps on
	SUBQ $16, CX
	JMP prloop

prdone:
	VZEROUPPER
	RET
