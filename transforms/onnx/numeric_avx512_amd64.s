//go:build !purego

#include "textflag.h"

// tanhf's vector kernel for AVX-512 (numeric.go; numeric_amd64.s's tanhAVX2
// at 16 lanes): the same float32 operations in the same order, masks in
// place of blends, so each lane's bits are tanhf's. Written by
// hand from tanhAVX2's sequence; two vectors a step, their instructions
// interleaved (a vector's chain of dependent operations is long: one alone
// leaves the core waiting), then one.

#include "expf_avx512_amd64.h"

// tanhf's rows of tanhTab16, after expf's (expf_avx512_amd64.h).
#define Z_TEN 1088(R8)
#define Z_SMALL 1152(R8)
#define Z_MTWO 1216(R8)
#define Z_T9 1280(R8)
#define Z_T7 1344(R8)
#define Z_T5 1408(R8)
#define Z_T3 1472(R8)
#define Z_T1 1536(R8)

// func tanhAVX512(y, x *float32, n int, tab *[25][16]float32) int
//
// y[i] = tanhf(x[i]) for i below the returned count (a multiple of 16 no
// larger than n); it stops before the first 16 values holding a NaN. y
// may be x.
TEXT ·tanhAVX512(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ tab+24(FP), R8
	XORQ DX, DX
	VMOVUPS Z_ONE, Z14
	VPXORD Z15, Z15, Z15
	VSUBPS Z14, Z15, Z15 // -1.0
	VPXORD Z14, Z15, Z15 // the sign bit

t32loop:
	LEAQ 32(DX), AX
	CMPQ AX, CX
	JGT t16loop
	VMOVUPS (SI)(DX*4), Z13 // v
	VMOVUPS 64(SI)(DX*4), Z29 // the second vector's v
	VCMPPS $3, Z13, Z13, K1 // NaN
	VCMPPS $3, Z29, Z29, K2
	KORTESTW K1, K2
	JNZ t16loop
	VPANDND Z13, Z15, Z12
	VPANDND Z29, Z15, Z28
	VMINPS Z_TEN, Z12, Z0
	VMINPS Z_TEN, Z28, Z16
	VMULPS Z_MTWO, Z0, Z0
	VMULPS Z_MTWO, Z16, Z16
	VMULPS Z_LOG2E, Z0, Z1
	VMULPS Z_LOG2E, Z16, Z17
	VADDPS Z_ROUND, Z1, Z1
	VADDPS Z_ROUND, Z17, Z17
	VSUBPS Z_ROUND, Z1, Z2
	VSUBPS Z_ROUND, Z17, Z18
	VMULPS Z_LN2HI, Z2, Z3
	VMULPS Z_LN2HI, Z18, Z19
	VSUBPS Z3, Z0, Z3
	VSUBPS Z19, Z16, Z19
	VMULPS Z_LN2LO, Z2, Z4
	VMULPS Z_LN2LO, Z18, Z20
	VSUBPS Z4, Z3, Z3
	VSUBPS Z20, Z19, Z19
	VMOVUPS Z_C5040, Z4
	VMOVUPS Z_C5040, Z20
	VFMADD213PS Z_C720, Z3, Z4
	VFMADD213PS Z_C720, Z19, Z20
	VFMADD213PS Z_C120, Z3, Z4
	VFMADD213PS Z_C120, Z19, Z20
	VFMADD213PS Z_C24, Z3, Z4
	VFMADD213PS Z_C24, Z19, Z20
	VFMADD213PS Z_C6, Z3, Z4
	VFMADD213PS Z_C6, Z19, Z20
	VFMADD213PS Z_C2, Z3, Z4
	VFMADD213PS Z_C2, Z19, Z20
	VFMADD213PS Z_ONE, Z3, Z4
	VFMADD213PS Z_ONE, Z19, Z20
	VFMADD213PS Z_ONE, Z3, Z4
	VFMADD213PS Z_ONE, Z19, Z20
	VCMPPS $1, Z_LOWNORM, Z0, K2
	VCMPPS $1, Z_LOWNORM, Z16, K6
	VMOVUPS Z_BIAS, Z6
	VMOVUPS Z_BIAS, Z22
	VMOVUPS Z_BIASLOW, K2, Z6
	VMOVUPS Z_BIASLOW, K6, Z22
	VPSUBD Z6, Z1, Z6
	VPSUBD Z22, Z17, Z22
	VPSLLD $23, Z6, Z6
	VPSLLD $23, Z22, Z22
	VMULPS Z6, Z4, Z4
	VMULPS Z22, Z20, Z20
	VMOVUPS Z_ONE, Z7
	VMOVUPS Z_ONE, Z23
	VMOVUPS Z_TWOM64, K2, Z7
	VMOVUPS Z_TWOM64, K6, Z23
	VMULPS Z7, Z4, Z4
	VMULPS Z23, Z20, Z20
	VCMPPS $1, Z_ZEROBELOW, Z0, K3
	VCMPPS $1, Z_ZEROBELOW, Z16, K7
	KNOTW K3, K3
	KNOTW K7, K7
	VMOVAPS.Z Z4, K3, Z4
	VMOVAPS.Z Z20, K7, Z20
	VSUBPS Z4, Z14, Z8
	VSUBPS Z20, Z14, Z24
	VADDPS Z4, Z14, Z9
	VADDPS Z20, Z14, Z25
	VDIVPS Z9, Z8, Z8
	VDIVPS Z25, Z24, Z24
	VPANDD Z15, Z13, Z10
	VPANDD Z15, Z29, Z26
	VPORD Z10, Z8, Z8
	VPORD Z26, Z24, Z24
	VMULPS Z13, Z13, Z1
	VMULPS Z29, Z29, Z17
	VMULPS Z_T9, Z1, Z2
	VMULPS Z_T9, Z17, Z18
	VADDPS Z_T7, Z2, Z2
	VADDPS Z_T7, Z18, Z18
	VMULPS Z1, Z2, Z2
	VMULPS Z17, Z18, Z18
	VADDPS Z_T5, Z2, Z2
	VADDPS Z_T5, Z18, Z18
	VMULPS Z1, Z2, Z2
	VMULPS Z17, Z18, Z18
	VADDPS Z_T3, Z2, Z2
	VADDPS Z_T3, Z18, Z18
	VMULPS Z1, Z2, Z2
	VMULPS Z17, Z18, Z18
	VADDPS Z_T1, Z2, Z2
	VADDPS Z_T1, Z18, Z18
	VMULPS Z1, Z13, Z3
	VMULPS Z17, Z29, Z19
	VMULPS Z2, Z3, Z3
	VMULPS Z18, Z19, Z19
	VADDPS Z3, Z13, Z3
	VADDPS Z19, Z29, Z19
	VCMPPS $1, Z_SMALL, Z12, K4
	VCMPPS $1, Z_SMALL, Z28, K2
	VMOVAPS Z3, K4, Z8
	VMOVAPS Z19, K2, Z24
	VPXORD Z6, Z6, Z6
	VPXORD Z22, Z22, Z22
	VCMPPS $0, Z6, Z12, K5
	VCMPPS $0, Z22, Z28, K3
	VMOVAPS Z13, K5, Z8
	VMOVAPS Z29, K3, Z24
	VMOVUPS Z8, (DI)(DX*4)
	VMOVUPS Z24, 64(DI)(DX*4)
	ADDQ $32, DX
	JMP t32loop

t16loop:
	LEAQ 16(DX), AX
	CMPQ AX, CX
	JGT t16done
	VMOVUPS (SI)(DX*4), Z13 // v
	VCMPPS $3, Z13, Z13, K1 // NaN
	KORTESTW K1, K1
	JNZ t16done
	VPANDND Z13, Z15, Z12 // a = |v|
	VMINPS Z_TEN, Z12, Z0
	VMULPS Z_MTWO, Z0, Z0 // -2 min(a, 10)
	VMULPS Z_LOG2E, Z0, Z1
	VADDPS Z_ROUND, Z1, Z1
	VSUBPS Z_ROUND, Z1, Z2
	VMULPS Z_LN2HI, Z2, Z3
	VSUBPS Z3, Z0, Z3
	VMULPS Z_LN2LO, Z2, Z4
	VSUBPS Z4, Z3, Z3
	VMOVUPS Z_C5040, Z4
	VFMADD213PS Z_C720, Z3, Z4
	VFMADD213PS Z_C120, Z3, Z4
	VFMADD213PS Z_C24, Z3, Z4
	VFMADD213PS Z_C6, Z3, Z4
	VFMADD213PS Z_C2, Z3, Z4
	VFMADD213PS Z_ONE, Z3, Z4
	VFMADD213PS Z_ONE, Z3, Z4
	VCMPPS $1, Z_LOWNORM, Z0, K2 // below expf's normal range
	VMOVUPS Z_BIAS, Z6
	VMOVUPS Z_BIASLOW, K2, Z6
	VPSUBD Z6, Z1, Z6
	VPSLLD $23, Z6, Z6
	VMULPS Z6, Z4, Z4
	VMOVUPS Z_ONE, Z7
	VMOVUPS Z_TWOM64, K2, Z7
	VMULPS Z7, Z4, Z4
	VCMPPS $1, Z_ZEROBELOW, Z0, K3
	KNOTW K3, K3
	VMOVAPS.Z Z4, K3, Z4 // t, 0 below -105
	VSUBPS Z4, Z14, Z8 // 1 - t
	VADDPS Z4, Z14, Z9 // 1 + t
	VDIVPS Z9, Z8, Z8
	VPANDD Z15, Z13, Z10
	VPORD Z10, Z8, Z8 // (1-t)/(1+t), v's sign
	VMULPS Z13, Z13, Z1 // z = v v
	VMULPS Z_T9, Z1, Z2
	VADDPS Z_T7, Z2, Z2
	VMULPS Z1, Z2, Z2
	VADDPS Z_T5, Z2, Z2
	VMULPS Z1, Z2, Z2
	VADDPS Z_T3, Z2, Z2
	VMULPS Z1, Z2, Z2
	VADDPS Z_T1, Z2, Z2
	VMULPS Z1, Z13, Z3 // v z
	VMULPS Z2, Z3, Z3
	VADDPS Z3, Z13, Z3 // v + v z p(z)
	VCMPPS $1, Z_SMALL, Z12, K4 // a < 0.3
	VMOVAPS Z3, K4, Z8
	VPXORD Z6, Z6, Z6
	VCMPPS $0, Z6, Z12, K5 // a == 0: v itself
	VMOVAPS Z13, K5, Z8
	VMOVUPS Z8, (DI)(DX*4)
	ADDQ $16, DX
	JMP t16loop

t16done:
	VZEROUPPER
	MOVQ DX, ret+32(FP)
	RET

// The fused epilogues' GELU for AVX-512 (geluErfAVX2 at 16 lanes): the same
// float32 operations in the same order, masks in place of blends, so each
// lane's bits are geluErf.apply's.

// Rows of erfTab16 (numeric_amd64.go): erfTab's, 16 copies each (64 bytes).
#define ZE_ABS 0(R8)
#define ZE_SIGN 64(R8)
#define ZE_ONE 128(R8)
#define ZE_FOUR 192(R8)
#define ZE_HALF5 256(R8)
#define ZE_P0 320(R8)
#define ZE_P1 384(R8)
#define ZE_P2 448(R8)
#define ZE_P3 512(R8)
#define ZE_P4 576(R8)
#define ZE_P5 640(R8)
#define ZE_P6 704(R8)
#define ZE_R0 768(R8)
#define ZE_R1 832(R8)
#define ZE_R2 896(R8)
#define ZE_R3 960(R8)
#define ZE_R4 1024(R8)
#define ZE_R5 1088(R8)
#define ZE_R6 1152(R8)
#define ZE_R7 1216(R8)
#define ZE_R8 1280(R8)
#define ZE_R9 1344(R8)
#define ZE_R10 1408(R8)
#define ZE_LOG2E 1472(R8)
#define ZE_ROUND 1536(R8)
#define ZE_LN2HI 1600(R8)
#define ZE_LN2LO 1664(R8)
#define ZE_C5040 1728(R8)
#define ZE_C720 1792(R8)
#define ZE_C120 1856(R8)
#define ZE_C24 1920(R8)
#define ZE_C6 1984(R8)
#define ZE_C2 2048(R8)
#define ZE_BIAS 2112(R8)
#define ZE_SQRTH 2176(R8)
#define ZE_HALF 2240(R8)

// ERF512 computes erff of Z0 into Z9, 16 lanes (numeric_amd64.s's ERF);
// clobbers Z1 to Z11 and K1 to K3.
#define ERF512 \
	VPANDD ZE_ABS, Z0, Z1 \
	VMULPS Z0, Z0, Z2 \
	VMOVUPS ZE_P6, Z3 \
	VFMADD213PS ZE_P5, Z2, Z3 \
	VFMADD213PS ZE_P4, Z2, Z3 \
	VFMADD213PS ZE_P3, Z2, Z3 \
	VFMADD213PS ZE_P2, Z2, Z3 \
	VFMADD213PS ZE_P1, Z2, Z3 \
	VFMADD213PS ZE_P0, Z2, Z3 \
	VMULPS Z3, Z0, Z3 \
	VSUBPS ZE_HALF5, Z1, Z4 \
	VMOVUPS ZE_R10, Z5 \
	VFMADD213PS ZE_R9, Z4, Z5 \
	VFMADD213PS ZE_R8, Z4, Z5 \
	VFMADD213PS ZE_R7, Z4, Z5 \
	VFMADD213PS ZE_R6, Z4, Z5 \
	VFMADD213PS ZE_R5, Z4, Z5 \
	VFMADD213PS ZE_R4, Z4, Z5 \
	VFMADD213PS ZE_R3, Z4, Z5 \
	VFMADD213PS ZE_R2, Z4, Z5 \
	VFMADD213PS ZE_R1, Z4, Z5 \
	VFMADD213PS ZE_R0, Z4, Z5 \
	VPXORD ZE_SIGN, Z1, Z6 \
	VMULPS Z1, Z6, Z6 \
	VMULPS ZE_LOG2E, Z6, Z8 \
	VADDPS ZE_ROUND, Z8, Z8 \
	VSUBPS ZE_ROUND, Z8, Z9 \
	VMULPS ZE_LN2HI, Z9, Z10 \
	VSUBPS Z10, Z6, Z10 \
	VMULPS ZE_LN2LO, Z9, Z11 \
	VSUBPS Z11, Z10, Z10 \
	VMOVUPS ZE_C5040, Z11 \
	VFMADD213PS ZE_C720, Z10, Z11 \
	VFMADD213PS ZE_C120, Z10, Z11 \
	VFMADD213PS ZE_C24, Z10, Z11 \
	VFMADD213PS ZE_C6, Z10, Z11 \
	VFMADD213PS ZE_C2, Z10, Z11 \
	VFMADD213PS ZE_ONE, Z10, Z11 \
	VFMADD213PS ZE_ONE, Z10, Z11 \
	VPSUBD ZE_BIAS, Z8, Z8 \
	VPSLLD $23, Z8, Z8 \
	VMULPS Z8, Z11, Z7 \
	VMULPS Z5, Z7, Z7 \
	VMOVUPS ZE_ONE, Z8 \
	VSUBPS Z7, Z8, Z7 \
	VPANDD ZE_SIGN, Z0, Z8 \
	VPXORD Z8, Z7, Z7 \
	VPORD ZE_ONE, Z8, Z9 \
	VCMPPS $3, Z0, Z0, K1 \
	VMOVAPS Z0, K1, Z9 \
	VCMPPS $1, ZE_FOUR, Z1, K2 \
	VMOVAPS Z7, K2, Z9 \
	VCMPPS $1, ZE_ONE, Z1, K3 \
	VMOVAPS Z3, K3, Z9

// func geluErfAVX512(y, x *float32, n int, tab *[36][16]float32, c, half float32, mode int)
//
// geluErfAVX2 at 16 lanes, n a multiple of 16. y may be x.
TEXT ·geluErfAVX512(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         tab+24(FP), R8
	VBROADCASTSS c+32(FP), Z12
	VBROADCASTSS half+36(FP), Z13
	MOVQ         mode+40(FP), R9

g16loop:
	CMPQ    CX, $16
	JLT     g16done
	VMOVUPS (SI), Z14
	TESTQ   $1, R9
	JZ      g16mul
	VDIVPS  Z12, Z14, Z0 // x / c
	JMP     g16erf

g16mul:
	VMULPS Z12, Z14, Z0 // x * c

g16erf:
	ERF512
	VADDPS ZE_ONE, Z9, Z9 // f
	TESTQ  $2, R9
	JZ     g16last
	VMULPS Z13, Z14, Z10 // x * half
	VMULPS Z9, Z10, Z9   // times f
	JMP    g16out

g16last:
	VMULPS Z9, Z14, Z10 // x * f
	VMULPS Z13, Z10, Z9 // times half

g16out:
	VMOVUPS Z9, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     g16loop

g16done:
	VZEROUPPER
	RET

// Sigmoid and SiLU for AVX-512: sigmoidInto's bits (and siluInPlace's),
// by expf's float32 operations in expf's order where they round, and
// where they only scale, one instruction that rounds as they do:
// VRNDSCALEPS for expf's n (x*log2e rounded to an integer, ties to even,
// as adding and taking away 1.5 * 2^23 rounds it), VSCALEFPS for p * 2^n
// (rounded once, as expf's product, or its two products below -87 whose
// first is exact), and x clamped at -105 (expf's 0 below it: p * 2^-151
// rounds to 0, as it does). Twelve of EXP512's instructions are then two,
// and the constants stay in registers: SiLU of 4096 values in L1 1055 ->
// 820 ns, efficientnet_b0 at batch 8 72.6 -> 68.2 ms at one thread, 53.7
// -> 51.6 at two (2-core Zen 5 VM, fastest of 60 runs, alternating
// builds). Two vectors a step, their instructions interleaved
// (the chain of one is long), then one. Rows of tanhTab16 (expf's:
// expf_avx512_amd64.h).

// func sigmoidAVX512(y, x *float32, n int, tab *[25][16]float32, silu int) int
//
// y[i] = sigmoidInto's value of x[i] (with silu nonzero, that times x[i])
// for i below the returned count (a multiple of 16 no larger than n); it
// stops before the first 16 values holding a NaN. y may be x.
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-48
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         tab+24(FP), R8
	MOVQ         silu+32(FP), R9
	XORQ         DX, DX
	VMOVUPS      Z_LOG2E, Z16
	VMOVUPS      Z_LN2HI, Z17
	VMOVUPS      Z_LN2LO, Z18
	VMOVUPS      Z_C5040, Z19
	VMOVUPS      Z_C720, Z20
	VMOVUPS      Z_C120, Z21
	VMOVUPS      Z_C24, Z22
	VMOVUPS      Z_C6, Z23
	VMOVUPS      Z_C2, Z24
	VMOVUPS      Z_ONE, Z25
	MOVL         $0xc2d20000, AX // -105
	VPBROADCASTD AX, Z26
	VPXORD       Z15, Z15, Z15
	VSUBPS       Z25, Z15, Z15   // -1.0
	VPXORD       Z25, Z15, Z15   // the sign bit

s32loop:
	LEAQ        32(DX), AX
	CMPQ        AX, CX
	JGT         s16loop
	VMOVUPS     (SI)(DX*4), Z0   // v
	VMOVUPS     64(SI)(DX*4), Z7 // the second vector's v
	VCMPPS      $3, Z0, Z0, K1   // NaN
	VCMPPS      $3, Z7, Z7, K2
	KORTESTW    K1, K2
	JNZ         s16loop
	VPORD       Z15, Z0, Z1      // x = -|v|
	VPORD       Z15, Z7, Z8
	VMAXPS      Z26, Z1, Z1      // at least -105
	VMAXPS      Z26, Z8, Z8
	VMULPS      Z16, Z1, Z2      // x * log2e
	VMULPS      Z16, Z8, Z9
	VRNDSCALEPS $0, Z2, Z2       // n
	VRNDSCALEPS $0, Z9, Z9
	VMULPS      Z17, Z2, Z3      // r = (x - n*ln2hi) - n*ln2lo
	VMULPS      Z17, Z9, Z10
	VSUBPS      Z3, Z1, Z3
	VSUBPS      Z10, Z8, Z10
	VMULPS      Z18, Z2, Z4
	VMULPS      Z18, Z9, Z11
	VSUBPS      Z4, Z3, Z3
	VSUBPS      Z11, Z10, Z10
	VMOVAPS     Z19, Z4          // p, expf's polynomial in r
	VMOVAPS     Z19, Z11
	VFMADD213PS Z20, Z3, Z4
	VFMADD213PS Z20, Z10, Z11
	VFMADD213PS Z21, Z3, Z4
	VFMADD213PS Z21, Z10, Z11
	VFMADD213PS Z22, Z3, Z4
	VFMADD213PS Z22, Z10, Z11
	VFMADD213PS Z23, Z3, Z4
	VFMADD213PS Z23, Z10, Z11
	VFMADD213PS Z24, Z3, Z4
	VFMADD213PS Z24, Z10, Z11
	VFMADD213PS Z25, Z3, Z4
	VFMADD213PS Z25, Z10, Z11
	VFMADD213PS Z25, Z3, Z4
	VFMADD213PS Z25, Z10, Z11
	VSCALEFPS   Z2, Z4, Z4       // t = p * 2^n = expf(-|v|)
	VSCALEFPS   Z9, Z11, Z11
	VADDPS      Z25, Z4, Z5      // 1 + t
	VADDPS      Z25, Z11, Z12
	VPTESTMD    Z15, Z0, K3      // the numerator: t where v's sign bit is set, else 1
	VPTESTMD    Z15, Z7, K4
	VBLENDMPS   Z4, Z25, K3, Z6
	VBLENDMPS   Z11, Z25, K4, Z13
	VDIVPS      Z5, Z6, Z6
	VDIVPS      Z12, Z13, Z13
	TESTQ       R9, R9
	JZ          s32out
	VMULPS      Z0, Z6, Z6       // SiLU: v times σ(v)
	VMULPS      Z7, Z13, Z13

s32out:
	VMOVUPS Z6, (DI)(DX*4)
	VMOVUPS Z13, 64(DI)(DX*4)
	ADDQ    $32, DX
	JMP     s32loop

s16loop:
	LEAQ        16(DX), AX
	CMPQ        AX, CX
	JGT         s16done
	VMOVUPS     (SI)(DX*4), Z0
	VCMPPS      $3, Z0, Z0, K1
	KORTESTW    K1, K1
	JNZ         s16done
	VPORD       Z15, Z0, Z1
	VMAXPS      Z26, Z1, Z1
	VMULPS      Z16, Z1, Z2
	VRNDSCALEPS $0, Z2, Z2
	VMULPS      Z17, Z2, Z3
	VSUBPS      Z3, Z1, Z3
	VMULPS      Z18, Z2, Z4
	VSUBPS      Z4, Z3, Z3
	VMOVAPS     Z19, Z4
	VFMADD213PS Z20, Z3, Z4
	VFMADD213PS Z21, Z3, Z4
	VFMADD213PS Z22, Z3, Z4
	VFMADD213PS Z23, Z3, Z4
	VFMADD213PS Z24, Z3, Z4
	VFMADD213PS Z25, Z3, Z4
	VFMADD213PS Z25, Z3, Z4
	VSCALEFPS   Z2, Z4, Z4
	VADDPS      Z25, Z4, Z5
	VPTESTMD    Z15, Z0, K3
	VBLENDMPS   Z4, Z25, K3, Z6
	VDIVPS      Z5, Z6, Z6
	TESTQ       R9, R9
	JZ          s16out
	VMULPS      Z0, Z6, Z6

s16out:
	VMOVUPS Z6, (DI)(DX*4)
	ADDQ    $16, DX
	JMP     s16loop

s16done:
	VZEROUPPER
	MOVQ DX, ret+40(FP)
	RET
