//go:build !purego

#include "textflag.h"

// func resizeTaps2AVX2(d, row *float32, i0, i1 *int32, w0, w1 *float64, base, l0, l1 *int32, n int)
//
// For o below n (a multiple of 8), 8 at a time: d[o] = float32(w0[o] *
// float64(row[i0[o]]) + w1[o] * float64(row[i1[o]])), the products and the
// sum each rounded in float64 (no FMA), as resizeTaps2 computes them. The
// taps of block o/8: where base[o/8] >= 0, lanes l0[o] and l1[o] of the 8
// inputs from row[base[o/8]] (one load, two permutes); else gathered
// through i0 and i1.
TEXT ·resizeTaps2AVX2(SB), NOSPLIT, $0-80
	MOVQ d+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ i0+16(FP), R8
	MOVQ i1+24(FP), R9
	MOVQ w0+32(FP), R10
	MOVQ w1+40(FP), R11
	MOVQ base+48(FP), R12
	MOVQ l0+56(FP), R14
	MOVQ l1+64(FP), DX
	MOVQ n+72(FP), CX
	XORQ AX, AX

loop:
	CMPQ    AX, CX
	JGE     done
	MOVQ    AX, BX
	SHRQ    $3, BX
	MOVLQSX (R12)(BX*4), R13 // base of the block
	TESTQ   R13, R13
	JS      gather
	VMOVUPS (SI)(R13*4), Y8  // row[base:base+8]
	VMOVDQU (R14)(AX*4), Y0
	VMOVDQU (DX)(AX*4), Y1
	VPERMPS Y8, Y0, Y3       // row[i0[o]]
	VPERMPS Y8, Y1, Y5       // row[i1[o]]
	JMP     compute

gather:
	VMOVDQU    (R8)(AX*4), Y0
	VMOVDQU    (R9)(AX*4), Y1
	VPCMPEQD   Y2, Y2, Y2
	VGATHERDPS Y2, (SI)(Y0*4), Y3 // row[i0[o]]
	VPCMPEQD   Y4, Y4, Y4
	VGATHERDPS Y4, (SI)(Y1*4), Y5 // row[i1[o]]

compute:
	VCVTPS2PD    X3, Y6 // outputs 0-3
	VCVTPS2PD    X5, Y7
	VMULPD       (R10)(AX*8), Y6, Y6
	VMULPD       (R11)(AX*8), Y7, Y7
	VADDPD       Y7, Y6, Y6
	VCVTPD2PSY   Y6, X6
	VMOVUPS      X6, (DI)(AX*4)
	VEXTRACTF128 $1, Y3, X3 // outputs 4-7
	VEXTRACTF128 $1, Y5, X5
	VCVTPS2PD    X3, Y6
	VCVTPS2PD    X5, Y7
	VMULPD       32(R10)(AX*8), Y6, Y6
	VMULPD       32(R11)(AX*8), Y7, Y7
	VADDPD       Y7, Y6, Y6
	VCVTPD2PSY   Y6, X6
	VMOVUPS      X6, 16(DI)(AX*4)
	ADDQ         $8, AX
	JMP          loop

done:
	VZEROUPPER
	RET
