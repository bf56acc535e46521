//go:build !purego

#include "textflag.h"

// func topKScanAVX2(row *float32, n int, thr float32, smallest bool) int
//
// Returns the start of the first 8 elements of row[:n&^7] among which one
// is not at or below thr (with smallest: not at or above thr; NaN is
// never at or past anything), or n&^7 where there is none. 32 elements an
// iteration while they last, then 8.
TEXT ·topKScanAVX2(SB), NOSPLIT, $0-32
	MOVQ         row+0(FP), SI
	MOVQ         n+8(FP), CX
	ANDQ         $~7, CX
	VBROADCASTSS thr+16(FP), Y7
	MOVBLZX      smallest+20(FP), R8
	XORQ         AX, AX
	TESTQ        R8, R8
	JNZ          min32

max32:
	LEAQ    32(AX), BX
	CMPQ    BX, CX
	JGT     max8
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS 64(SI)(AX*4), Y2
	VMOVUPS 96(SI)(AX*4), Y3
	VCMPPS  $6, Y7, Y0, Y0 // not v <= thr (NLE_US: true for NaN)
	VCMPPS  $6, Y7, Y1, Y1
	VCMPPS  $6, Y7, Y2, Y2
	VCMPPS  $6, Y7, Y3, Y3
	VORPS   Y0, Y1, Y4
	VORPS   Y2, Y3, Y5
	VORPS   Y4, Y5, Y4
	VPTEST  Y4, Y4
	JNZ     found32
	MOVQ    BX, AX
	JMP     max32

max8:
	LEAQ    8(AX), BX
	CMPQ    BX, CX
	JGT     done
	VMOVUPS (SI)(AX*4), Y0
	VCMPPS  $6, Y7, Y0, Y0
	VPTEST  Y0, Y0
	JNZ     done
	MOVQ    BX, AX
	JMP     max8

min32:
	LEAQ    32(AX), BX
	CMPQ    BX, CX
	JGT     min8
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS 64(SI)(AX*4), Y2
	VMOVUPS 96(SI)(AX*4), Y3
	VCMPPS  $9, Y7, Y0, Y0 // not v >= thr (NGE_US: true for NaN)
	VCMPPS  $9, Y7, Y1, Y1
	VCMPPS  $9, Y7, Y2, Y2
	VCMPPS  $9, Y7, Y3, Y3
	VORPS   Y0, Y1, Y4
	VORPS   Y2, Y3, Y5
	VORPS   Y4, Y5, Y4
	VPTEST  Y4, Y4
	JNZ     found32
	MOVQ    BX, AX
	JMP     min32

min8:
	LEAQ    8(AX), BX
	CMPQ    BX, CX
	JGT     done
	VMOVUPS (SI)(AX*4), Y0
	VCMPPS  $9, Y7, Y0, Y0
	VPTEST  Y0, Y0
	JNZ     done
	MOVQ    BX, AX
	JMP     min8

found32:
	// The first of the four vectors with a lane set.
	VPTEST Y0, Y0
	JNZ    done
	ADDQ   $8, AX
	VPTEST Y1, Y1
	JNZ    done
	ADDQ   $8, AX
	VPTEST Y2, Y2
	JNZ    done
	ADDQ   $8, AX

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET
