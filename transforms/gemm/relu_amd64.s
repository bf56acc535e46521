//go:build !purego

#include "textflag.h"

// func reluAVX512(x *float32, n int)
// n a multiple of 16: x[i] = 0 where x[i] < 0 (ordered: NaN stays).
TEXT ·reluAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VPXORD Z1, Z1, Z1
	XORQ AX, AX
	TESTQ CX, CX
	JLE relu512_done
relu512_loop:
	VMOVUPS (DI)(AX*4), Z0
	VCMPPS $1, Z1, Z0, K1
	VMOVUPS Z1, K1, (DI)(AX*4)
	ADDQ $16, AX
	CMPQ AX, CX
	JLT relu512_loop
relu512_done:
	VZEROUPPER
	RET

// func reluAVX2(x *float32, n int)
// n a multiple of 8.
TEXT ·reluAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VXORPS Y1, Y1, Y1
	XORQ AX, AX
	TESTQ CX, CX
	JLE relu2_done
relu2_loop:
	VMOVUPS (DI)(AX*4), Y0
	VCMPPS $1, Y1, Y0, Y2
	VANDNPS Y0, Y2, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT relu2_loop
relu2_done:
	VZEROUPPER
	RET
