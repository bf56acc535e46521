//go:build !purego

#include "textflag.h"

// func dotRowsAVX512(y, w *float32, ldw int, x *float32, k, n int)
//
// y[j] = Σ w[j*ldw + p] * x[p] for p < k, j < n (ldw in floats, k a
// multiple of 16): four sums of 16 lanes a row, 64 floats a step, then 16,
// added at the end.
TEXT ·dotRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ ldw+16(FP), R8
	SHLQ $2, R8
	MOVQ x+24(FP), DX
	MOVQ k+32(FP), BX
	SHLQ $2, BX        // bytes of a row
	MOVQ BX, R10
	ANDQ $-256, R10    // bytes in steps of 64 floats
	MOVQ n+40(FP), CX

row:
	TESTQ  CX, CX
	JZ     done
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX

loop64:
	CMPQ        AX, R10
	JGE         loop16
	VMOVUPS     (SI)(AX*1), Z4
	VMOVUPS     64(SI)(AX*1), Z5
	VMOVUPS     128(SI)(AX*1), Z6
	VMOVUPS     192(SI)(AX*1), Z7
	VFMADD231PS (DX)(AX*1), Z4, Z0
	VFMADD231PS 64(DX)(AX*1), Z5, Z1
	VFMADD231PS 128(DX)(AX*1), Z6, Z2
	VFMADD231PS 192(DX)(AX*1), Z7, Z3
	ADDQ        $256, AX
	JMP         loop64

loop16:
	CMPQ        AX, BX
	JGE         reduce
	VMOVUPS     (SI)(AX*1), Z4
	VFMADD231PS (DX)(AX*1), Z4, Z0
	ADDQ        $64, AX
	JMP         loop16

reduce:
	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VEXTRACTF32X8 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4E, X0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0xB1, X0, X1
	VADDSS        X1, X0, X0
	VMOVSS        X0, (DI)
	ADDQ          $4, DI
	ADDQ          R8, SI
	DECQ          CX
	JMP           row

done:
	VZEROUPPER
	RET
