//go:build !purego

#include "textflag.h"

// func prefetchL2(p *float32, lines int)
//
// PREFETCHT1 of lines cache lines (64 bytes) from p: a hint, which never
// faults.
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX
	TESTQ CX, CX
	JLE done
loop:
	PREFETCHT1 (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ loop
done:
	RET
