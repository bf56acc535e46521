//go:build !purego

#include "textflag.h"
#include "sum4_avx512_amd64.h"

// SUMTAIL8(p, acc, t) adds the 8 floats at p, as float64s, to the eight
// running sums in acc (lane j: the values at 8q+j).
#define SUMTAIL8(p, acc, t) \
	VCVTPS2PD p, t \
	VADDPD    t, acc, acc

// func layerNormRowsAVX512(x, y, scale, bias *float32, rows, n int, eps float64)
//
// layerNormRowF32 of each of rows rows of n >= 1 floats (row r at x +
// r*n, into y + r*n; y may be x; bias nil: none), one call for them all,
// each row's bits meanInv's and normRow's: the sum in float64 in sum4's
// order (eight running sums over the whole 8-vectors, reduced as sumAVX2
// does, then the last n%8 values as sum4's Go loop adds them), the mean,
// the squared deviations' sum in sqDev4's order, the inverse standard
// deviation, then ((x - mean) * inv) * scale (+ bias) in float32. The
// rows' last n%16 values are read and written under a mask.
TEXT ·layerNormRowsAVX512(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ scale+16(FP), DX
	MOVQ bias+24(FP), BX
	MOVQ rows+32(FP), CX
	MOVQ n+40(FP), R8
	ROWSHAPE(R8) // R9 a row's bytes, R10 its whole 16-vectors, R11 and K7 the last vector's values and lanes
	VCVTSI2SDQ R8, X15, X15 // n as a float64

lrow:
	TESTQ CX, CX
	JZ    ldone

	// The sum.
	VPXORQ Z28, Z28, Z28
	XORQ   R12, R12
	MOVQ   R10, R13

lsum:
	TESTQ         R13, R13
	JZ            lsumlast
	VMOVUPS       (SI)(R12*1), Z2
	SUMTAIL8(Y2, Z28, Z3)
	VEXTRACTF64X4 $1, Z2, Y2
	SUMTAIL8(Y2, Z28, Z3)
	ADDQ          $64, R12
	DECQ          R13
	JMP           lsum

lsumlast:
	CMPQ    R11, $8
	JLT     lsumred
	VMOVUPS (SI)(R12*1), Y2 // a whole 8-vector
	SUMTAIL8(Y2, Z28, Z3)

lsumred:
	REDUCE8(Z28)
	MOVQ R8, AX
	ANDQ $7, AX
	MOVQ R8, R12
	ANDQ $-8, R12
	LEAQ (SI)(R12*4), R12 // the last n%8 values
	SUM4TAIL(lsumt1, lmean)
	VDIVSD       X15, X0, X14 // the mean
	VBROADCASTSD X14, Z27

	// The squared deviations' sum.
	VPXORQ Z28, Z28, Z28
	XORQ   R12, R12
	MOVQ   R10, R13

lsq:
	TESTQ         R13, R13
	JZ            lsqlast
	VMOVUPS       (SI)(R12*1), Z2
	VCVTPS2PD     Y2, Z3
	VSUBPD        Z27, Z3, Z3
	VMULPD        Z3, Z3, Z3
	VADDPD        Z3, Z28, Z28
	VEXTRACTF64X4 $1, Z2, Y2
	VCVTPS2PD     Y2, Z3
	VSUBPD        Z27, Z3, Z3
	VMULPD        Z3, Z3, Z3
	VADDPD        Z3, Z28, Z28
	ADDQ          $64, R12
	DECQ          R13
	JMP           lsq

lsqlast:
	CMPQ      R11, $8
	JLT       lsqred
	VCVTPS2PD (SI)(R12*1), Z3
	VSUBPD    Z27, Z3, Z3
	VMULPD    Z3, Z3, Z3
	VADDPD    Z3, Z28, Z28

lsqred:
	REDUCE8(Z28)
	VXORPD X1, X1, X1
	VXORPD X2, X2, X2
	VXORPD X3, X3, X3
	MOVQ   R8, AX
	ANDQ   $7, AX
	MOVQ   R8, R12
	ANDQ   $-8, R12
	LEAQ   (SI)(R12*4), R12
	CMPQ   AX, $4
	JLT    lsqt1
	VCVTSS2SD (R12), X4, X4
	VSUBSD    X14, X4, X4
	VMULSD    X4, X4, X4
	VADDSD    X4, X0, X0
	VCVTSS2SD 4(R12), X4, X4
	VSUBSD    X14, X4, X4
	VMULSD    X4, X4, X4
	VADDSD    X4, X1, X1
	VCVTSS2SD 8(R12), X4, X4
	VSUBSD    X14, X4, X4
	VMULSD    X4, X4, X4
	VADDSD    X4, X2, X2
	VCVTSS2SD 12(R12), X4, X4
	VSUBSD    X14, X4, X4
	VMULSD    X4, X4, X4
	VADDSD    X4, X3, X3
	ADDQ      $16, R12
	SUBQ      $4, AX

lsqt1:
	TESTQ     AX, AX
	JZ        linv
	VCVTSS2SD (R12), X4, X4
	VSUBSD    X14, X4, X4
	VMULSD    X4, X4, X4
	VADDSD    X4, X0, X0
	ADDQ      $4, R12
	DECQ      AX
	JMP       lsqt1

linv:
	// 1 / sqrt(sum / n + eps), then the mean and it as float32s.
	VADDSD       X1, X0, X0
	VADDSD       X3, X2, X2
	VADDSD       X2, X0, X0
	VDIVSD       X15, X0, X0
	VADDSD       eps+48(FP), X0, X0
	VSQRTSD      X0, X0, X0
	MOVQ         $0x3ff0000000000000, AX
	VMOVQ        AX, X1
	VDIVSD       X0, X1, X1
	VCVTSD2SS    X1, X1, X1
	VBROADCASTSS X1, Z25 // inv
	VCVTSD2SS    X14, X14, X2
	VBROADCASTSS X2, Z26 // the mean

	// ((x - mean) * inv) * scale (+ bias).
	XORQ R12, R12
	MOVQ R10, R13

lnorm:
	TESTQ   R13, R13
	JZ      lnormlast
	VMOVUPS (SI)(R12*1), Z2
	VSUBPS  Z26, Z2, Z2
	VMULPS  Z25, Z2, Z2
	VMULPS  (DX)(R12*1), Z2, Z2
	TESTQ   BX, BX
	JZ      lnormst
	VADDPS  (BX)(R12*1), Z2, Z2

lnormst:
	VMOVUPS Z2, (DI)(R12*1)
	ADDQ    $64, R12
	DECQ    R13
	JMP     lnorm

lnormlast:
	TESTQ     R11, R11
	JZ        lnext
	VMOVUPS.Z (SI)(R12*1), K7, Z2
	VMOVUPS.Z (DX)(R12*1), K7, Z3
	VSUBPS    Z26, Z2, Z2
	VMULPS    Z25, Z2, Z2
	VMULPS    Z3, Z2, Z2
	TESTQ     BX, BX
	JZ        lnormlst
	VMOVUPS.Z (BX)(R12*1), K7, Z3
	VADDPS    Z3, Z2, Z2

lnormlst:
	VMOVUPS Z2, K7, (DI)(R12*1)

lnext:
	ADDQ R9, SI
	ADDQ R9, DI
	DECQ CX
	JMP  lrow

ldone:
	VZEROUPPER
	RET
