//go:build !purego

#include "textflag.h"
#include "expf_avx512_amd64.h"
#include "sum4_avx512_amd64.h"

// func softmaxRowsAVX512(x, y *float32, rows, n int, tab *[25][16]float32) int
//
// softmaxRowF32 of each of rows rows of n >= 1 floats (row r at x + r*n,
// into y + r*n; y may be x), one call for them all, each row's bits
// softmaxRowF32's: the largest value, expf of each value less it
// (EXP512), their sum in float64 in sum4's order (eight running partial
// sums over the whole 8-vectors, reduced as sumAVX2 does, then the last
// n%8 values as sum4's Go loop adds them), the inverse rounded to float32,
// each value times it. It stops before the first row that holds a NaN or
// whose largest value is infinite (softmaxRowF32 takes other paths there)
// and returns how many rows it did. The rows' last n%16 values are read
// and written under a mask.
TEXT ·softmaxRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ rows+16(FP), CX
	MOVQ n+24(FP), BX
	MOVQ tab+32(FP), R8
	XORQ DX, DX // rows done
	ROWSHAPE(BX) // R9 a row's bytes, R10 its whole 16-vectors, R11 and K7 the last vector's values and lanes
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z31 // -Inf

srow:
	CMPQ DX, CX
	JGE  sdone

	// The largest value, and whether one is NaN.
	VMOVAPS Z31, Z20
	KXORW   K6, K6, K6
	XORQ    R12, R12
	MOVQ    R10, R13

smax:
	TESTQ   R13, R13
	JZ      smaxlast
	VMOVUPS (SI)(R12*1), Z0
	VCMPPS  $3, Z0, Z0, K1
	KORW    K1, K6, K6
	VMAXPS  Z0, Z20, Z20
	ADDQ    $64, R12
	DECQ    R13
	JMP     smax

smaxlast:
	TESTQ   R11, R11
	JZ      smaxdone
	VMOVAPS Z31, Z0
	VMOVUPS (SI)(R12*1), K7, Z0 // lanes past n stay -Inf
	VCMPPS  $3, Z0, Z0, K1
	KORW    K1, K6, K6
	VMAXPS  Z0, Z20, Z20

smaxdone:
	KORTESTW      K6, K6
	JNZ           sdone
	VMOVAPS       Z20, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VMAXPS        X1, X0, X0
	VSUBSS        X0, X0, X1 // NaN where the largest is infinite
	VUCOMISS      X1, X1
	JPS           sdone
	VBROADCASTSS  X0, Z30

	// expf of each value less the largest, stored, and summed as float64
	// in eight running sums (lane j: the values at 8q+j).
	VPXORQ Z28, Z28, Z28
	XORQ   R12, R12
	MOVQ   R10, R13

sexp:
	TESTQ         R13, R13
	JZ            sexplast
	VMOVUPS       (SI)(R12*1), Z0
	VSUBPS        Z30, Z0, Z0
	EXP512(Z0, Z1, Z3, Z2, Z4, Z6, Z7, K1, K2)
	VMOVUPS       Z4, (DI)(R12*1)
	VCVTPS2PD     Y4, Z5
	VADDPD        Z5, Z28, Z28
	VEXTRACTF64X4 $1, Z4, Y5
	VCVTPS2PD     Y5, Z5
	VADDPD        Z5, Z28, Z28
	ADDQ          $64, R12
	DECQ          R13
	JMP           sexp

sexplast:
	TESTQ     R11, R11
	JZ        ssum
	VMOVUPS.Z (SI)(R12*1), K7, Z0
	VSUBPS    Z30, Z0, Z0
	EXP512(Z0, Z1, Z3, Z2, Z4, Z6, Z7, K1, K2)
	VMOVUPS   Z4, K7, (DI)(R12*1)
	CMPQ      R11, $8
	JLT       ssum
	VCVTPS2PD Y4, Z5 // a whole 8-vector
	VADDPD    Z5, Z28, Z28

ssum:
	REDUCE8(Z28)
	MOVQ BX, AX
	ANDQ $7, AX
	MOVQ BX, R12
	ANDQ $-8, R12
	LEAQ (DI)(R12*4), R12 // the last n%8 values
	SUM4TAIL(stail1, stotal)
	MOVQ         $0x3ff0000000000000, AX
	VMOVQ        AX, X1
	VDIVSD       X0, X1, X1 // 1 / sum
	VCVTSD2SS    X1, X1, X1
	VBROADCASTSS X1, Z29

	// Each value times the inverse.
	XORQ R12, R12
	MOVQ R10, R13

sscale:
	TESTQ   R13, R13
	JZ      sscalelast
	VMULPS  (DI)(R12*1), Z29, Z0
	VMOVUPS Z0, (DI)(R12*1)
	ADDQ    $64, R12
	DECQ    R13
	JMP     sscale

sscalelast:
	TESTQ     R11, R11
	JZ        snext
	VMOVUPS.Z (DI)(R12*1), K7, Z0
	VMULPS    Z29, Z0, Z0
	VMOVUPS   Z0, K7, (DI)(R12*1)

snext:
	ADDQ R9, SI
	ADDQ R9, DI
	INCQ DX
	JMP  srow

sdone:
	VZEROUPPER
	MOVQ DX, ret+40(FP)
	RET
