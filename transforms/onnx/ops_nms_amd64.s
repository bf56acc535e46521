//go:build !purego

#include "textflag.h"

// func nmsSuppressAVX2(b *nmsBox, planes *float32, stride, n int, iou float32) (done int, hit bool)
//
// Box b (y1, x1, y2, x2, area) against the boxes i < n&^7 of planes (y1,
// x1, y2, x2 and area, a plane every stride values), 8 at a time, with
// nmsKept.suppresses' operations: ih = min(b.y2, y2) - max(b.y1, y1), iw
// likewise; where both are above 0, inter = ih*iw and the IoU inter /
// ((b.area + area) - inter). hit: one is above iou (done is then where);
// else done = n&^7. No value is NaN (a box of positive area has none), so
// VMINPS and VMAXPS are Go's min and max.
TEXT ·nmsSuppressAVX2(SB), NOSPLIT, $0-49
	MOVQ         b+0(FP), DI
	VBROADCASTSS 0(DI), Y8   // b.y1
	VBROADCASTSS 4(DI), Y9   // b.x1
	VBROADCASTSS 8(DI), Y10  // b.y2
	VBROADCASTSS 12(DI), Y11 // b.x2
	VBROADCASTSS 16(DI), Y12 // b.area
	VBROADCASTSS iou+32(FP), Y13
	VXORPS       Y14, Y14, Y14
	MOVQ         planes+8(FP), SI // y1
	MOVQ         stride+16(FP), DX
	SHLQ         $2, DX
	LEAQ         (SI)(DX*1), R8   // x1
	LEAQ         (R8)(DX*1), R9   // y2
	LEAQ         (R9)(DX*1), R10  // x2
	LEAQ         (R10)(DX*1), R11 // area
	MOVQ         n+24(FP), CX
	ANDQ         $~7, CX
	XORQ         AX, AX

loop:
	CMPQ    AX, CX
	JGE     none
	VMINPS  (R9)(AX*4), Y10, Y0 // min(b.y2, y2)
	VMAXPS  (SI)(AX*4), Y8, Y1  // max(b.y1, y1)
	VSUBPS  Y1, Y0, Y0          // ih
	VMINPS  (R10)(AX*4), Y11, Y2
	VMAXPS  (R8)(AX*4), Y9, Y3
	VSUBPS  Y3, Y2, Y2          // iw
	VCMPPS  $0x0E, Y14, Y0, Y4  // ih > 0
	VCMPPS  $0x0E, Y14, Y2, Y5  // iw > 0
	VANDPS  Y4, Y5, Y4
	VPTEST  Y4, Y4
	JZ      next
	VMULPS  Y2, Y0, Y6          // inter
	VADDPS  (R11)(AX*4), Y12, Y7
	VSUBPS  Y6, Y7, Y7          // union
	VDIVPS  Y7, Y6, Y7          // IoU
	VCMPPS  $0x0E, Y13, Y7, Y7  // IoU > iou (false for NaN)
	VANDPS  Y4, Y7, Y7
	VPTEST  Y7, Y7
	JNZ     hit

next:
	ADDQ $8, AX
	JMP  loop

none:
	VZEROUPPER
	MOVQ AX, done+40(FP)
	MOVB $0, hit+48(FP)
	RET

hit:
	VZEROUPPER
	MOVQ AX, done+40(FP)
	MOVB $1, hit+48(FP)
	RET
