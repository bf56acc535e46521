//go:build !purego

#include "textflag.h"

// func arithAVX2(op int, z, x, y *float32, n, mode int)
//
// z[i] = x[i] op y[i] for i < n (a multiple of 8): op 0 Add, 1 Sub, 2
// Mul, 3 Div (ewOp's order); mode 0: both vectors, 1: y one value (y[0]
// for every i), 2: x one value. One IEEE operation a value, as Go's.
TEXT ·arithAVX2(SB), NOSPLIT, $0-48
	MOVQ op+0(FP), AX
	MOVQ z+8(FP), DI
	MOVQ x+16(FP), SI
	MOVQ y+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ mode+40(FP), BX
	VBROADCASTSS (SI), Y14 // x[0]
	VBROADCASTSS (DX), Y15 // y[0]
	LEAQ (BX)(AX*4), AX // the loop: mode + 4 op
	CMPQ AX, $0
	JEQ ar_add_vv
	CMPQ AX, $1
	JEQ ar_add_vs
	CMPQ AX, $2
	JEQ ar_add_sv
	CMPQ AX, $4
	JEQ ar_sub_vv
	CMPQ AX, $5
	JEQ ar_sub_vs
	CMPQ AX, $6
	JEQ ar_sub_sv
	CMPQ AX, $8
	JEQ ar_mul_vv
	CMPQ AX, $9
	JEQ ar_mul_vs
	CMPQ AX, $10
	JEQ ar_mul_sv
	CMPQ AX, $12
	JEQ ar_div_vv
	CMPQ AX, $13
	JEQ ar_div_vs
	CMPQ AX, $14
	JEQ ar_div_sv
	JMP ar_done

ar_add_vv:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (SI), Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP ar_add_vv

ar_add_vs:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (SI), Y0
	VADDPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP ar_add_vs

ar_add_sv:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (DX), Y1
	VADDPS Y1, Y14, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP ar_add_sv

ar_sub_vv:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (SI), Y0
	VSUBPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP ar_sub_vv

ar_sub_vs:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP ar_sub_vs

ar_sub_sv:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (DX), Y1
	VSUBPS Y1, Y14, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP ar_sub_sv

ar_mul_vv:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (SI), Y0
	VMULPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP ar_mul_vv

ar_mul_vs:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (SI), Y0
	VMULPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP ar_mul_vs

ar_mul_sv:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (DX), Y1
	VMULPS Y1, Y14, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP ar_mul_sv

ar_div_vv:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (SI), Y0
	VDIVPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP ar_div_vv

ar_div_vs:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (SI), Y0
	VDIVPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP ar_div_vs

ar_div_sv:
	CMPQ CX, $8
	JLT ar_done
	VMOVUPS (DX), Y1
	VDIVPS Y1, Y14, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP ar_div_sv

ar_done:
	VZEROUPPER
	RET
