//go:build !purego

#include "textflag.h"

// Clip (opsets 6, 11, 12, 13) on float32: the AVX-512 kernel of
// ops_activation.go.

// func clampAVX512(y, x *float32, n int, lo, hi float32)
//
// y[i] = min(max(x[i], lo), hi) for i < n; a NaN x[i] stays NaN (VMAXPS and
// VMINPS return their second source, here x, when either is NaN). 64
// values a step, then 16, then the rest under a mask (lanes past n are
// neither read nor written).
TEXT ·clampAVX512(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS lo+24(FP), Z1
	VBROADCASTSS hi+28(FP), Z2

by64:
	CMPQ    CX, $64
	JLT     by16
	VMOVUPS (SI), Z3
	VMOVUPS 64(SI), Z4
	VMOVUPS 128(SI), Z5
	VMOVUPS 192(SI), Z6
	VMAXPS  Z3, Z1, Z3
	VMAXPS  Z4, Z1, Z4
	VMAXPS  Z5, Z1, Z5
	VMAXPS  Z6, Z1, Z6
	VMINPS  Z3, Z2, Z3
	VMINPS  Z4, Z2, Z4
	VMINPS  Z5, Z2, Z5
	VMINPS  Z6, Z2, Z6
	VMOVUPS Z3, (DI)
	VMOVUPS Z4, 64(DI)
	VMOVUPS Z5, 128(DI)
	VMOVUPS Z6, 192(DI)
	ADDQ    $256, SI
	ADDQ    $256, DI
	SUBQ    $64, CX
	JMP     by64

by16:
	CMPQ    CX, $16
	JLT     rest
	VMOVUPS (SI), Z3
	VMAXPS  Z3, Z1, Z3
	VMINPS  Z3, Z2, Z3
	VMOVUPS Z3, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     by16

rest:
	TESTQ     CX, CX
	JZ        done
	MOVQ      $1, AX
	SHLQ      CX, AX
	DECQ      AX
	KMOVW     AX, K1
	VMOVUPS.Z (SI), K1, Z3
	VMAXPS    Z3, Z1, Z3
	VMINPS    Z3, Z2, Z3
	VMOVUPS   Z3, K1, (DI)

done:
	VZEROUPPER
	RET
