//go:build !purego

#include "textflag.h"

// Winograd's F(2x2, 3x3) transforms on AVX-512 (ops_conv_winograd.go):
// a register a pixel of a block (16 channels), the sums in the order of
// winoInGo and winoOutGo. Transformed position ξ = 4a + c is at
// P[a] + c*xi, P[a] = base + 4a*xi: (P)(R9*1), (P)(R9*2), (P)(R10*1),
// R10 = 3*xi.

// func winoInAVX512(v *float32, xi int, x *float32, ld int, k int)
//
// A tile at a time (k of them, x 128 bytes apart): its 4x4 pixels d into
// Z0-Z15 (row a, column c: Z(4a+c); rows ld bytes apart: SI, SI+DX,
// SI+2DX, SI+BX), Bᵀ d into Z16-Z31 column by column, then each of those
// rows by B into Z0-Z15, stored at ξ = 4a + c (DI, R11, R12, R13: rows a
// of ξ), each tile 64 bytes on.
// Requires: AVX512F
TEXT ·winoInAVX512(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), DI
	MOVQ xi+8(FP), R9
	MOVQ x+16(FP), SI
	MOVQ ld+24(FP), DX
	MOVQ k+32(FP), CX
	LEAQ (R9)(R9*2), R10
	LEAQ (DI)(R9*4), R11
	LEAQ (R11)(R9*4), R12
	LEAQ (R12)(R9*4), R13
	LEAQ (DX)(DX*2), BX
winoIn_loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VMOVUPS (SI)(DX*1), Z4
	VMOVUPS 64(SI)(DX*1), Z5
	VMOVUPS 128(SI)(DX*1), Z6
	VMOVUPS 192(SI)(DX*1), Z7
	VMOVUPS (SI)(DX*2), Z8
	VMOVUPS 64(SI)(DX*2), Z9
	VMOVUPS 128(SI)(DX*2), Z10
	VMOVUPS 192(SI)(DX*2), Z11
	VMOVUPS (SI)(BX*1), Z12
	VMOVUPS 64(SI)(BX*1), Z13
	VMOVUPS 128(SI)(BX*1), Z14
	VMOVUPS 192(SI)(BX*1), Z15
	VSUBPS Z8, Z0, Z16
	VADDPS Z8, Z4, Z20
	VSUBPS Z4, Z8, Z24
	VSUBPS Z12, Z4, Z28
	VSUBPS Z9, Z1, Z17
	VADDPS Z9, Z5, Z21
	VSUBPS Z5, Z9, Z25
	VSUBPS Z13, Z5, Z29
	VSUBPS Z10, Z2, Z18
	VADDPS Z10, Z6, Z22
	VSUBPS Z6, Z10, Z26
	VSUBPS Z14, Z6, Z30
	VSUBPS Z11, Z3, Z19
	VADDPS Z11, Z7, Z23
	VSUBPS Z7, Z11, Z27
	VSUBPS Z15, Z7, Z31
	VSUBPS Z18, Z16, Z0
	VADDPS Z18, Z17, Z1
	VSUBPS Z17, Z18, Z2
	VSUBPS Z19, Z17, Z3
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, (DI)(R9*1)
	VMOVUPS Z2, (DI)(R9*2)
	VMOVUPS Z3, (DI)(R10*1)
	VSUBPS Z22, Z20, Z4
	VADDPS Z22, Z21, Z5
	VSUBPS Z21, Z22, Z6
	VSUBPS Z23, Z21, Z7
	VMOVUPS Z4, (R11)
	VMOVUPS Z5, (R11)(R9*1)
	VMOVUPS Z6, (R11)(R9*2)
	VMOVUPS Z7, (R11)(R10*1)
	VSUBPS Z26, Z24, Z8
	VADDPS Z26, Z25, Z9
	VSUBPS Z25, Z26, Z10
	VSUBPS Z27, Z25, Z11
	VMOVUPS Z8, (R12)
	VMOVUPS Z9, (R12)(R9*1)
	VMOVUPS Z10, (R12)(R9*2)
	VMOVUPS Z11, (R12)(R10*1)
	VSUBPS Z30, Z28, Z12
	VADDPS Z30, Z29, Z13
	VSUBPS Z29, Z30, Z14
	VSUBPS Z31, Z29, Z15
	VMOVUPS Z12, (R13)
	VMOVUPS Z13, (R13)(R9*1)
	VMOVUPS Z14, (R13)(R9*2)
	VMOVUPS Z15, (R13)(R10*1)
	ADDQ $128, SI
	ADDQ $64, DI
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	DECQ CX
	JNZ winoIn_loop
	VZEROUPPER
	RET

// func winoOutAVX512(y *float32, ld int, m *float32, xi int, bias *float32, z *float32, k int, act *nchwcAct)
//
// A tile at a time (k of them, M's 64 bytes apart): its 16 products into
// Z0-Z15 (ξ = 4a + c from SI, R11, R12, R13), each row by A into Z16-Z23
// (two a row), Aᵀ by those into the 2x2 outputs Z24-Z27, then + bias
// (Z28), + z where z is not nil (BX, laid out as y), clamped to [lo, hi]
// (Z30, Z31: VMAXPS and VMINPS with the sum the second source, as the
// blocked kernels clamp) and stored at y, y+64, y+ld, y+ld+64 (DI: 128
// bytes on a tile).
// Requires: AVX512F
TEXT ·winoOutAVX512(SB), NOSPLIT, $0-64
	MOVQ y+0(FP), DI
	MOVQ ld+8(FP), DX
	MOVQ m+16(FP), SI
	MOVQ xi+24(FP), R9
	MOVQ bias+32(FP), AX
	MOVQ z+40(FP), BX
	MOVQ k+48(FP), CX
	MOVQ act+56(FP), R8
	VMOVUPS (AX), Z28
	VBROADCASTSS (R8), Z30
	VBROADCASTSS 4(R8), Z31
	LEAQ (R9)(R9*2), R10
	LEAQ (SI)(R9*4), R11
	LEAQ (R11)(R9*4), R12
	LEAQ (R12)(R9*4), R13
winoOut_loop:
	VMOVUPS (SI), Z0
	VMOVUPS (SI)(R9*1), Z1
	VMOVUPS (SI)(R9*2), Z2
	VMOVUPS (SI)(R10*1), Z3
	VMOVUPS (R11), Z4
	VMOVUPS (R11)(R9*1), Z5
	VMOVUPS (R11)(R9*2), Z6
	VMOVUPS (R11)(R10*1), Z7
	VMOVUPS (R12), Z8
	VMOVUPS (R12)(R9*1), Z9
	VMOVUPS (R12)(R9*2), Z10
	VMOVUPS (R12)(R10*1), Z11
	VMOVUPS (R13), Z12
	VMOVUPS (R13)(R9*1), Z13
	VMOVUPS (R13)(R9*2), Z14
	VMOVUPS (R13)(R10*1), Z15
	VADDPS Z1, Z0, Z16
	VADDPS Z2, Z16, Z16
	VSUBPS Z2, Z1, Z17
	VSUBPS Z3, Z17, Z17
	VADDPS Z5, Z4, Z18
	VADDPS Z6, Z18, Z18
	VSUBPS Z6, Z5, Z19
	VSUBPS Z7, Z19, Z19
	VADDPS Z9, Z8, Z20
	VADDPS Z10, Z20, Z20
	VSUBPS Z10, Z9, Z21
	VSUBPS Z11, Z21, Z21
	VADDPS Z13, Z12, Z22
	VADDPS Z14, Z22, Z22
	VSUBPS Z14, Z13, Z23
	VSUBPS Z15, Z23, Z23
	VADDPS Z18, Z16, Z24
	VADDPS Z20, Z24, Z24
	VSUBPS Z20, Z18, Z26
	VSUBPS Z22, Z26, Z26
	VADDPS Z19, Z17, Z25
	VADDPS Z21, Z25, Z25
	VSUBPS Z21, Z19, Z27
	VSUBPS Z23, Z27, Z27
	VADDPS Z28, Z24, Z24
	VADDPS Z28, Z25, Z25
	VADDPS Z28, Z26, Z26
	VADDPS Z28, Z27, Z27
	TESTQ BX, BX
	JZ winoOut_noz
	VADDPS (BX), Z24, Z24
	VADDPS 64(BX), Z25, Z25
	VADDPS (BX)(DX*1), Z26, Z26
	VADDPS 64(BX)(DX*1), Z27, Z27
	ADDQ $128, BX
winoOut_noz:
	VMAXPS Z24, Z30, Z24
	VMINPS Z24, Z31, Z24
	VMOVUPS Z24, (DI)
	VMAXPS Z25, Z30, Z25
	VMINPS Z25, Z31, Z25
	VMOVUPS Z25, 64(DI)
	VMAXPS Z26, Z30, Z26
	VMINPS Z26, Z31, Z26
	VMOVUPS Z26, (DI)(DX*1)
	VMAXPS Z27, Z30, Z27
	VMINPS Z27, Z31, Z27
	VMOVUPS Z27, 64(DI)(DX*1)
	ADDQ $128, DI
	ADDQ $64, SI
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	DECQ CX
	JNZ winoOut_loop
	VZEROUPPER
	RET
