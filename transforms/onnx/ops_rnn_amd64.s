//go:build !purego

#include "textflag.h"

// LSTM's gates in one pass (lstmGate1, ops_rnn_fast.go), 8 units at a
// time. Each σ is sigmoidAVX2's (numeric_amd64.s): the same float32
// operations as sigmoidf, no FMA, so each lane's bits are lstmGate1's.

#include "expf_amd64.h"

// SIGMOID: Y9 = σ(Y13), with t = expf(-|v|): 1/(1+t) where v's sign bit
// is clear, t/(1+t) where it is set. Uses Y0 to Y8; Y14 holds 1.0 and Y15
// the sign bit.
#define SIGMOID \
	VORPS     Y15, Y13, Y0 \
	EXPF \
	VADDPS    Y14, Y4, Y8 \
	VBLENDVPS Y13, Y4, Y14, Y9 \
	VDIVPS    Y8, Y9, Y9

// func lstmGatesAVX2(gates, c, h *float32, hidden, n int, tab *[17][8]float32)
//
// For j < n (a multiple of 8), g = gates and H = hidden: with i, o, f
// and c2 the sums g[j], g[H+j], g[2H+j] and g[3H+j] (c2 twice the c
// gate's),
//
//	c[j] = σ(f) c[j] + σ(i) (2σ(c2) - 1),  h[j] = σ(o) (2σ(2c[j]) - 1).
TEXT ·lstmGatesAVX2(SB), NOSPLIT, $0-48
	MOVQ    gates+0(FP), SI
	MOVQ    c+8(FP), DI
	MOVQ    h+16(FP), BX
	MOVQ    hidden+24(FP), R9
	MOVQ    n+32(FP), CX
	MOVQ    tab+40(FP), R8
	SHLQ    $2, R9            // H in bytes
	LEAQ    (SI)(R9*2), R10   // the f gate's sums; c's follow at R9
	XORQ    DX, DX
	VMOVUPS ONE, Y14
	VXORPS  Y15, Y15, Y15
	VSUBPS  Y14, Y15, Y15     // -1.0: its sign bit alone differs from 1.0
	VXORPS  Y14, Y15, Y15     // the sign bit

gateloop:
	LEAQ 8(DX), AX
	CMPQ AX, CX
	JGT  gatedone
	LEAQ (SI)(DX*4), R11      // &g[j]
	LEAQ (R10)(DX*4), R12     // &g[2H+j]

	VMOVUPS (R11), Y13
	SIGMOID
	VMOVAPS Y9, Y10           // σ(i)
	VMOVUPS (R12)(R9*1), Y13
	SIGMOID
	VADDPS  Y9, Y9, Y9
	VSUBPS  Y14, Y9, Y9       // tanh c̃ = 2σ(c2) - 1
	VMULPS  Y9, Y10, Y10      // σ(i) tanh c̃
	VMOVUPS (R12), Y13
	SIGMOID                   // σ(f)
	VMOVUPS (DI)(DX*4), Y11
	VMULPS  Y11, Y9, Y11
	VADDPS  Y10, Y11, Y11     // c = σ(f) c + σ(i) tanh c̃
	VMOVUPS Y11, (DI)(DX*4)
	VADDPS  Y11, Y11, Y13
	SIGMOID
	VADDPS  Y9, Y9, Y9
	VSUBPS  Y14, Y9, Y12      // tanh c
	VMOVUPS (R11)(R9*1), Y13
	SIGMOID                   // σ(o)
	VMULPS  Y12, Y9, Y9
	VMOVUPS Y9, (BX)(DX*4)
	ADDQ    $8, DX
	JMP     gateloop

gatedone:
	VZEROUPPER
	RET

// func gruGatesAVX2(hr, x, rbh, h *float32, hidden, n int, tab *[17][8]float32)
//
// For j < n (a multiple of 8), H = hidden: with the hidden state's
// products hr (gates z, r, h at j, H+j, 2H+j), the projections x (the
// same) and the h gate's R bias rbh,
//
//	z = σ(hr_z + x_z),  r = σ(hr_r + x_r),
//	n = 2σ(2 (x_h + r (hr_h + rbh))) - 1,  h[j] = (1 - z) n + z h[j]
//
// (gruGate1's operations, so its bits).
TEXT ·gruGatesAVX2(SB), NOSPLIT, $0-56
	MOVQ    hr+0(FP), SI
	MOVQ    x+8(FP), R10
	MOVQ    rbh+16(FP), R11
	MOVQ    h+24(FP), BX
	MOVQ    hidden+32(FP), R9
	MOVQ    n+40(FP), CX
	MOVQ    tab+48(FP), R8
	SHLQ    $2, R9            // H in bytes
	XORQ    DX, DX
	VMOVUPS ONE, Y14
	VXORPS  Y15, Y15, Y15
	VSUBPS  Y14, Y15, Y15
	VXORPS  Y14, Y15, Y15     // the sign bit

gruloop:
	LEAQ 8(DX), AX
	CMPQ AX, CX
	JGT  grudone
	LEAQ (SI)(DX*4), R12      // &hr[j]
	LEAQ (R10)(DX*4), R13     // &x[j]

	VMOVUPS (R12), Y13
	VADDPS  (R13), Y13, Y13
	SIGMOID
	VMOVAPS Y9, Y10           // z
	VMOVUPS (R12)(R9*1), Y13
	VADDPS  (R13)(R9*1), Y13, Y13
	SIGMOID                   // r
	LEAQ    (R12)(R9*2), AX
	VMOVUPS (AX), Y12
	VADDPS  (R11)(DX*4), Y12, Y12 // hr_h + rbh
	VMULPS  Y12, Y9, Y12          // r (hr_h + rbh)
	LEAQ    (R13)(R9*2), AX
	VADDPS  (AX), Y12, Y12        // x_h + r (hr_h + rbh)
	VADDPS  Y12, Y12, Y13
	SIGMOID
	VADDPS  Y9, Y9, Y9
	VSUBPS  Y14, Y9, Y9       // n = 2σ - 1
	VSUBPS  Y10, Y14, Y12     // 1 - z
	VMULPS  Y9, Y12, Y12
	VMULPS  (BX)(DX*4), Y10, Y11 // z h
	VADDPS  Y11, Y12, Y12
	VMOVUPS Y12, (BX)(DX*4)
	ADDQ    $8, DX
	JMP     gruloop

grudone:
	VZEROUPPER
	RET
