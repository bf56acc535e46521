//go:build !purego

#include "textflag.h"

// The vector form of expf (numeric.go): the same float32 operations in the
// same order, 8 lanes at a time, so each lane's bits are expf's. No FMA:
// expf's products and sums are rounded one by one, and so are these.

// Rows of expTab (numeric_amd64.go), 8 copies of a constant each: 32 bytes.
#define LOG2E 0(R8)
#define ROUND 32(R8)
#define LN2HI 64(R8)
#define LN2LO 96(R8)
#define C5040 128(R8)
#define C720 160(R8)
#define C120 192(R8)
#define C24 224(R8)
#define C6 256(R8)
#define C2 288(R8)
#define ONE 320(R8)
#define HI 352(R8)
#define LOWNORM 384(R8)
#define ZEROBELOW 416(R8)
#define TWOM64 448(R8)
#define BIAS 480(R8)
#define BIASLOW 512(R8)

// func expAVX2(y, x *float32, n int, sub float32, tab *float32) int
//
// y[i] = expf(x[i] - sub) for i below the returned count, a multiple of 8
// no larger than n: the kernel stops before the first 8 values of which
// one, less sub, is over 88 or NaN (expf's math.Exp cases), and leaves
// those to Go. y may be x.
TEXT ·expAVX2(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS sub+24(FP), Y15
	MOVQ         tab+32(FP), R8
	XORQ         DX, DX

loop:
	LEAQ      8(DX), AX
	CMPQ      AX, CX
	JGT       done
	VMOVUPS   (SI)(DX*4), Y0
	VSUBPS    Y15, Y0, Y0  // x - sub
	VCMPPS    $6, HI, Y0, Y1  // !(x <= 88): over, or NaN
	VMOVMSKPS Y1, AX
	TESTL     AX, AX
	JNZ       done

	VMULPS  LOG2E, Y0, Y1
	VADDPS  ROUND, Y1, Y1  // t = x log2e + 1.5*2^23
	VSUBPS  ROUND, Y1, Y2  // n = t - 1.5*2^23
	VMULPS  LN2HI, Y2, Y3
	VSUBPS  Y3, Y0, Y3
	VMULPS  LN2LO, Y2, Y4
	VSUBPS  Y4, Y3, Y3  // r = (x - n ln2Hi) - n ln2Lo
	VMULPS  C5040, Y3, Y4
	VADDPS  C720, Y4, Y4
	VMULPS  Y3, Y4, Y4
	VADDPS  C120, Y4, Y4
	VMULPS  Y3, Y4, Y4
	VADDPS  C24, Y4, Y4
	VMULPS  Y3, Y4, Y4
	VADDPS  C6, Y4, Y4
	VMULPS  Y3, Y4, Y4
	VADDPS  C2, Y4, Y4
	VMULPS  Y3, Y4, Y4
	VADDPS  ONE, Y4, Y4
	VMULPS  Y3, Y4, Y4
	VADDPS  ONE, Y4, Y4  // p

	// 2^n, or for x < -87 2^(n+64) then 2^-64
	VCMPPS    $1, LOWNORM, Y0, Y5  // x < -87
	VMOVUPS   BIAS, Y6
	VBLENDVPS Y5, BIASLOW, Y6, Y6
	VPSUBD    Y6, Y1, Y6
	VPSLLD    $23, Y6, Y6
	VMULPS    Y6, Y4, Y4
	VMOVUPS   ONE, Y7
	VBLENDVPS Y5, TWOM64, Y7, Y7
	VMULPS    Y7, Y4, Y4
	VCMPPS    $1, ZEROBELOW, Y0, Y5  // x < -105: 0
	VANDNPS   Y4, Y5, Y4
	VMOVUPS   Y4, (DI)(DX*4)
	ADDQ      $8, DX
	JMP       loop

done:
	VZEROUPPER
	MOVQ DX, ret+40(FP)
	RET
