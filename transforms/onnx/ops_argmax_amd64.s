//go:build !purego

#include "textflag.h"

// func argStepAVX2(best *float32, idx *int32, r *float32, n int, j int32, isMin bool) (done int, nan bool)
//
// For i below done (n rounded down to a multiple of 8): where r[i] > best[i]
// (r[i] < best[i] with isMin), best[i] = r[i] and idx[i] = j; nan reports a
// NaN among r[:done] (the caller then does the rows again with NaN's rules).
TEXT ·argStepAVX2(SB), NOSPLIT, $0-49
	MOVQ         best+0(FP), DI
	MOVQ         idx+8(FP), SI
	MOVQ         r+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVL         j+32(FP), R9
	VMOVD        R9, X3
	VPBROADCASTD X3, Y3
	MOVBLZX      isMin+36(FP), R8
	VXORPS       Y4, Y4, Y4
	XORQ         AX, AX
	TESTQ        R8, R8
	JNZ          minloop

maxloop:
	LEAQ      8(AX), BX
	CMPQ      BX, CX
	JGT       done
	VMOVUPS   (DX)(AX*4), Y0 // v
	VMOVUPS   (DI)(AX*4), Y1 // b
	VCMPPS    $0x0E, Y1, Y0, Y2 // v > b (false for NaN)
	VCMPPS    $3, Y0, Y0, Y5    // v is NaN
	VORPS     Y5, Y4, Y4
	VBLENDVPS Y2, Y0, Y1, Y1
	VMOVUPS   Y1, (DI)(AX*4)
	VMOVUPS   (SI)(AX*4), Y6
	VBLENDVPS Y2, Y3, Y6, Y6
	VMOVUPS   Y6, (SI)(AX*4)
	MOVQ      BX, AX
	JMP       maxloop

minloop:
	LEAQ      8(AX), BX
	CMPQ      BX, CX
	JGT       done
	VMOVUPS   (DX)(AX*4), Y0
	VMOVUPS   (DI)(AX*4), Y1
	VCMPPS    $0x01, Y1, Y0, Y2 // v < b (false for NaN)
	VCMPPS    $3, Y0, Y0, Y5
	VORPS     Y5, Y4, Y4
	VBLENDVPS Y2, Y0, Y1, Y1
	VMOVUPS   Y1, (DI)(AX*4)
	VMOVUPS   (SI)(AX*4), Y6
	VBLENDVPS Y2, Y3, Y6, Y6
	VMOVUPS   Y6, (SI)(AX*4)
	MOVQ      BX, AX
	JMP       minloop

done:
	VMOVMSKPS  Y4, BX
	VZEROUPPER
	MOVQ       AX, done+40(FP)
	TESTL      BX, BX
	SETNE      nan+48(FP)
	RET
