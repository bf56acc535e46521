//go:build !purego

#include "textflag.h"

// Conv (opsets 1, 11), depthwise, and MaxPool (1, 8, 10, 11, 12) without
// Indices: the AVX-512 kernels of ops_conv_depthwise.go and ops_pool.go.

// func dwStripeAVX512(y *float32, ldy, rows int, srcs **float32, off, ldx int, w *float32, taps int, bias float32, mask int)
//
// One stripe of up to 16 columns (the lanes set in mask) of rows output
// rows: y[r*ldy+i] = bias + sum over t < taps of w[t] * srcs[t][off/4 +
// r*ldx + i]. Four rows at a time (four independent sums hide the FMA
// latency), then one; lanes outside mask are neither read nor written.
TEXT ·dwStripeAVX512(SB), NOSPLIT, $0-80
	MOVQ         y+0(FP), DI
	MOVQ         ldy+8(FP), R11
	SHLQ         $2, R11
	MOVQ         rows+16(FP), BX
	MOVQ         srcs+24(FP), SI
	MOVQ         off+32(FP), AX
	MOVQ         ldx+40(FP), R12
	SHLQ         $2, R12
	MOVQ         w+48(FP), DX
	MOVQ         taps+56(FP), R8
	VBROADCASTSS bias+64(FP), Z5
	MOVQ         mask+72(FP), CX
	KMOVW        CX, K1
	XORQ         R13, R13 // the rows' offset into the sources, bytes

rows4:
	CMPQ    BX, $4
	JLT     rows1
	VMOVAPS Z5, Z0
	VMOVAPS Z5, Z1
	VMOVAPS Z5, Z2
	VMOVAPS Z5, Z3
	XORQ    R9, R9

taps4:
	MOVQ           (SI)(R9*8), R10
	ADDQ           R13, R10
	ADDQ           AX, R10
	LEAQ           (R10)(R12*2), R14
	VBROADCASTSS   (DX)(R9*4), Z4
	VMOVUPS.Z      (R10), K1, Z6
	VMOVUPS.Z      (R10)(R12*1), K1, Z7
	VMOVUPS.Z      (R14), K1, Z8
	VMOVUPS.Z      (R14)(R12*1), K1, Z9
	VFMADD231PS    Z6, Z4, Z0
	VFMADD231PS    Z7, Z4, Z1
	VFMADD231PS    Z8, Z4, Z2
	VFMADD231PS    Z9, Z4, Z3
	INCQ           R9
	CMPQ           R9, R8
	JLT            taps4
	LEAQ           (DI)(R11*2), R14
	VMOVUPS        Z0, K1, (DI)
	VMOVUPS        Z1, K1, (DI)(R11*1)
	VMOVUPS        Z2, K1, (R14)
	VMOVUPS        Z3, K1, (R14)(R11*1)
	LEAQ           (R14)(R11*2), DI
	LEAQ           (R13)(R12*4), R13
	SUBQ           $4, BX
	JMP            rows4

rows1:
	TESTQ   BX, BX
	JZ      done
	VMOVAPS Z5, Z0
	XORQ    R9, R9

taps1:
	MOVQ         (SI)(R9*8), R10
	ADDQ         R13, R10
	ADDQ         AX, R10
	VBROADCASTSS (DX)(R9*4), Z4
	VMOVUPS.Z    (R10), K1, Z6
	VFMADD231PS  Z6, Z4, Z0
	INCQ         R9
	CMPQ         R9, R8
	JLT          taps1
	VMOVUPS      Z0, K1, (DI)
	ADDQ         R11, DI
	ADDQ         R12, R13
	DECQ         BX
	JMP          rows1

done:
	VZEROUPPER
	RET

// func deint2AVX512(even, odd, src *float32, rows, pairs, ldd, lds int, idx *int32, lo, hi, out int)
//
// For each of rows rows (even and odd ldd floats apart, src lds apart):
// even[i] = src[2i], odd[i] = src[2i+1] for i < pairs; idx holds the
// permutations 0, 2, ..., 30 then 1, 3, ..., 31. The last pairs%16 pairs
// are read with the masks lo and hi (the first and second 16 floats) and
// written with out.
TEXT ·deint2AVX512(SB), NOSPLIT, $0-88
	MOVQ      even+0(FP), DI
	MOVQ      odd+8(FP), R8
	MOVQ      src+16(FP), SI
	MOVQ      rows+24(FP), BX
	MOVQ      ldd+40(FP), R11
	SHLQ      $2, R11
	MOVQ      lds+48(FP), R12
	SHLQ      $2, R12
	MOVQ      idx+56(FP), DX
	VMOVDQU32 (DX), Z2
	VMOVDQU32 64(DX), Z3
	MOVQ      lo+64(FP), AX
	KMOVW     AX, K1
	MOVQ      hi+72(FP), AX
	KMOVW     AX, K2
	MOVQ      out+80(FP), AX
	KMOVW     AX, K3

row:
	TESTQ BX, BX
	JZ    end
	MOVQ  pairs+32(FP), CX
	XORQ  AX, AX // pair offset, bytes of output
	XORQ  R9, R9 // source offset, bytes

loop:
	CMPQ      CX, $16
	JLT       tail
	VMOVUPS   (SI)(R9*1), Z0
	VMOVUPS   64(SI)(R9*1), Z1
	VMOVAPS   Z0, Z4
	VPERMT2PS Z1, Z2, Z0
	VPERMT2PS Z1, Z3, Z4
	VMOVUPS   Z0, (DI)(AX*1)
	VMOVUPS   Z4, (R8)(AX*1)
	ADDQ      $128, R9
	ADDQ      $64, AX
	SUBQ      $16, CX
	JMP       loop

tail:
	TESTQ     CX, CX
	JZ        next
	VMOVUPS.Z (SI)(R9*1), K1, Z0
	VMOVUPS.Z 64(SI)(R9*1), K2, Z1
	VMOVAPS   Z0, Z4
	VPERMT2PS Z1, Z2, Z0
	VPERMT2PS Z1, Z3, Z4
	VMOVUPS   Z0, K3, (DI)(AX*1)
	VMOVUPS   Z4, K3, (R8)(AX*1)

next:
	ADDQ R11, DI
	ADDQ R11, R8
	ADDQ R12, SI
	DECQ BX
	JMP  row

end:
	VZEROUPPER
	RET

// func mpStripeAVX512(y *float32, ldy, rows int, srcs **float32, off, ldx, taps int, mask int)
//
// MaxPool's stripe: y[r*ldy+i] = max over t < taps of srcs[t][off/4 +
// r*ldx + i], NaN if any is NaN, for the lanes i set in mask; four rows at
// a time, then one.
TEXT ·mpStripeAVX512(SB), NOSPLIT, $0-64
	MOVQ  y+0(FP), DI
	MOVQ  ldy+8(FP), R11
	SHLQ  $2, R11
	MOVQ  rows+16(FP), BX
	MOVQ  srcs+24(FP), SI
	MOVQ  off+32(FP), AX
	MOVQ  ldx+40(FP), R12
	SHLQ  $2, R12
	MOVQ  taps+48(FP), R8
	MOVQ  mask+56(FP), CX
	KMOVW CX, K1
	MOVL  $0x7fc00000, CX
	VPBROADCASTD CX, Z10 // a quiet NaN
	MOVL  $0xff800000, CX
	VPBROADCASTD CX, Z11 // -Inf
	XORQ  R13, R13

mrows4:
	CMPQ    BX, $4
	JLT     mrows1
	VMOVAPS Z11, Z0
	VMOVAPS Z11, Z1
	VMOVAPS Z11, Z2
	VMOVAPS Z11, Z3
	KXORW   K2, K2, K2
	KXORW   K3, K3, K3
	KXORW   K4, K4, K4
	KXORW   K5, K5, K5
	XORQ    R9, R9

mtaps4:
	MOVQ      (SI)(R9*8), R10
	ADDQ      R13, R10
	ADDQ      AX, R10
	LEAQ      (R10)(R12*2), R14
	VMOVUPS.Z (R10), K1, Z6
	VMOVUPS.Z (R10)(R12*1), K1, Z7
	VMOVUPS.Z (R14), K1, Z8
	VMOVUPS.Z (R14)(R12*1), K1, Z9
	VCMPPS    $3, Z6, Z6, K6
	KORW      K6, K2, K2
	VCMPPS    $3, Z7, Z7, K6
	KORW      K6, K3, K3
	VCMPPS    $3, Z8, Z8, K6
	KORW      K6, K4, K4
	VCMPPS    $3, Z9, Z9, K6
	KORW      K6, K5, K5
	VMAXPS    Z6, Z0, Z0
	VMAXPS    Z7, Z1, Z1
	VMAXPS    Z8, Z2, Z2
	VMAXPS    Z9, Z3, Z3
	INCQ      R9
	CMPQ      R9, R8
	JLT       mtaps4
	VMOVAPS   Z10, K2, Z0
	VMOVAPS   Z10, K3, Z1
	VMOVAPS   Z10, K4, Z2
	VMOVAPS   Z10, K5, Z3
	LEAQ      (DI)(R11*2), R14
	VMOVUPS   Z0, K1, (DI)
	VMOVUPS   Z1, K1, (DI)(R11*1)
	VMOVUPS   Z2, K1, (R14)
	VMOVUPS   Z3, K1, (R14)(R11*1)
	LEAQ      (R14)(R11*2), DI
	LEAQ      (R13)(R12*4), R13
	SUBQ      $4, BX
	JMP       mrows4

mrows1:
	TESTQ   BX, BX
	JZ      mdone
	VMOVAPS Z11, Z0
	KXORW   K2, K2, K2
	XORQ    R9, R9

mtaps1:
	MOVQ      (SI)(R9*8), R10
	ADDQ      R13, R10
	ADDQ      AX, R10
	VMOVUPS.Z (R10), K1, Z6
	VCMPPS    $3, Z6, Z6, K6
	KORW      K6, K2, K2
	VMAXPS    Z6, Z0, Z0
	INCQ      R9
	CMPQ      R9, R8
	JLT       mtaps1
	VMOVAPS   Z10, K2, Z0
	VMOVUPS   Z0, K1, (DI)
	ADDQ      R11, DI
	ADDQ      R12, R13
	DECQ      BX
	JMP       mrows1

mdone:
	VZEROUPPER
	RET

// func dwStripeAVX2(y *float32, ldy, rows int, srcs **float32, off, ldx int, w *float32, taps int, bias float32, mask *int32, full int)
//
// dwStripeAVX512 for AVX2 and FMA: a stripe of up to 8 columns. mask points
// to 8 int32s, all ones on the lanes to read and write; with full != 0
// every lane is, and the outputs are stored whole (a masked store costs
// several times a plain one on AMD's cores). Loads are masked either way:
// lanes outside the mask are never read.
TEXT ·dwStripeAVX2(SB), NOSPLIT, $0-88
	MOVQ         y+0(FP), DI
	MOVQ         ldy+8(FP), R11
	SHLQ         $2, R11
	MOVQ         rows+16(FP), BX
	MOVQ         srcs+24(FP), SI
	MOVQ         off+32(FP), AX
	MOVQ         ldx+40(FP), R12
	SHLQ         $2, R12
	MOVQ         w+48(FP), DX
	MOVQ         taps+56(FP), R8
	VBROADCASTSS bias+64(FP), Y5
	MOVQ         mask+72(FP), CX
	VMOVDQU      (CX), Y15
	MOVQ         full+80(FP), CX
	XORQ         R13, R13 // the rows' offset into the sources, bytes

arows4:
	CMPQ    BX, $4
	JLT     arows1
	VMOVAPS Y5, Y0
	VMOVAPS Y5, Y1
	VMOVAPS Y5, Y2
	VMOVAPS Y5, Y3
	XORQ    R9, R9

ataps4:
	MOVQ         (SI)(R9*8), R10
	ADDQ         R13, R10
	ADDQ         AX, R10
	LEAQ         (R10)(R12*2), R14
	VBROADCASTSS (DX)(R9*4), Y4
	VMASKMOVPS   (R10), Y15, Y6
	VMASKMOVPS   (R10)(R12*1), Y15, Y7
	VMASKMOVPS   (R14), Y15, Y8
	VMASKMOVPS   (R14)(R12*1), Y15, Y9
	VFMADD231PS  Y6, Y4, Y0
	VFMADD231PS  Y7, Y4, Y1
	VFMADD231PS  Y8, Y4, Y2
	VFMADD231PS  Y9, Y4, Y3
	INCQ         R9
	CMPQ         R9, R8
	JLT          ataps4
	LEAQ         (DI)(R11*2), R14
	TESTQ        CX, CX
	JZ           astore4m
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, (DI)(R11*1)
	VMOVUPS      Y2, (R14)
	VMOVUPS      Y3, (R14)(R11*1)
	JMP          anext4

astore4m:
	VMASKMOVPS Y0, Y15, (DI)
	VMASKMOVPS Y1, Y15, (DI)(R11*1)
	VMASKMOVPS Y2, Y15, (R14)
	VMASKMOVPS Y3, Y15, (R14)(R11*1)

anext4:
	LEAQ (R14)(R11*2), DI
	LEAQ (R13)(R12*4), R13
	SUBQ $4, BX
	JMP  arows4

arows1:
	TESTQ   BX, BX
	JZ      adone
	VMOVAPS Y5, Y0
	XORQ    R9, R9

ataps1:
	MOVQ         (SI)(R9*8), R10
	ADDQ         R13, R10
	ADDQ         AX, R10
	VBROADCASTSS (DX)(R9*4), Y4
	VMASKMOVPS   (R10), Y15, Y6
	VFMADD231PS  Y6, Y4, Y0
	INCQ         R9
	CMPQ         R9, R8
	JLT          ataps1
	TESTQ        CX, CX
	JZ           astore1m
	VMOVUPS      Y0, (DI)
	JMP          anext1

astore1m:
	VMASKMOVPS Y0, Y15, (DI)

anext1:
	ADDQ R11, DI
	ADDQ R12, R13
	DECQ BX
	JMP  arows1

adone:
	VZEROUPPER
	RET

// func mpStripeAVX2(y *float32, ldy, rows int, srcs **float32, off, ldx, taps int, mask *int32, full int)
//
// mpStripeAVX512 for AVX2: a stripe of up to 8 columns (mask points to 8
// int32s, all ones on the lanes read and written; full != 0 stores whole
// vectors, as dwStripeAVX2). NaN: each row's unordered lanes are ORed
// into a mask of their own and blended in at the end.
TEXT ·mpStripeAVX2(SB), NOSPLIT, $0-72
	MOVQ         y+0(FP), DI
	MOVQ         ldy+8(FP), R11
	SHLQ         $2, R11
	MOVQ         rows+16(FP), BX
	MOVQ         srcs+24(FP), SI
	MOVQ         off+32(FP), AX
	MOVQ         ldx+40(FP), R12
	SHLQ         $2, R12
	MOVQ         taps+48(FP), R8
	MOVQ         mask+56(FP), CX
	VMOVDQU      (CX), Y15
	MOVQ         full+64(FP), DX
	MOVL         $0x7fc00000, CX
	MOVQ         CX, X14
	VBROADCASTSS X14, Y14 // a quiet NaN
	MOVL         $0xff800000, CX
	MOVQ         CX, X5
	VBROADCASTSS X5, Y5 // -Inf
	XORQ         R13, R13

nrows4:
	CMPQ    BX, $4
	JLT     nrows1
	VMOVAPS Y5, Y0
	VMOVAPS Y5, Y1
	VMOVAPS Y5, Y2
	VMOVAPS Y5, Y3
	VXORPS  Y10, Y10, Y10
	VXORPS  Y11, Y11, Y11
	VXORPS  Y12, Y12, Y12
	VXORPS  Y13, Y13, Y13
	XORQ    R9, R9

ntaps4:
	MOVQ       (SI)(R9*8), R10
	ADDQ       R13, R10
	ADDQ       AX, R10
	LEAQ       (R10)(R12*2), R14
	VMASKMOVPS (R10), Y15, Y6
	VMASKMOVPS (R10)(R12*1), Y15, Y7
	VMASKMOVPS (R14), Y15, Y8
	VMASKMOVPS (R14)(R12*1), Y15, Y9
	VCMPPS     $3, Y6, Y6, Y4
	VORPS      Y4, Y10, Y10
	VCMPPS     $3, Y7, Y7, Y4
	VORPS      Y4, Y11, Y11
	VCMPPS     $3, Y8, Y8, Y4
	VORPS      Y4, Y12, Y12
	VCMPPS     $3, Y9, Y9, Y4
	VORPS      Y4, Y13, Y13
	VMAXPS     Y6, Y0, Y0
	VMAXPS     Y7, Y1, Y1
	VMAXPS     Y8, Y2, Y2
	VMAXPS     Y9, Y3, Y3
	INCQ       R9
	CMPQ       R9, R8
	JLT        ntaps4
	VBLENDVPS  Y10, Y14, Y0, Y0
	VBLENDVPS  Y11, Y14, Y1, Y1
	VBLENDVPS  Y12, Y14, Y2, Y2
	VBLENDVPS  Y13, Y14, Y3, Y3
	LEAQ       (DI)(R11*2), R14
	TESTQ      DX, DX
	JZ         nstore4m
	VMOVUPS    Y0, (DI)
	VMOVUPS    Y1, (DI)(R11*1)
	VMOVUPS    Y2, (R14)
	VMOVUPS    Y3, (R14)(R11*1)
	JMP        nnext4

nstore4m:
	VMASKMOVPS Y0, Y15, (DI)
	VMASKMOVPS Y1, Y15, (DI)(R11*1)
	VMASKMOVPS Y2, Y15, (R14)
	VMASKMOVPS Y3, Y15, (R14)(R11*1)

nnext4:
	LEAQ (R14)(R11*2), DI
	LEAQ (R13)(R12*4), R13
	SUBQ $4, BX
	JMP  nrows4

nrows1:
	TESTQ   BX, BX
	JZ      ndone
	VMOVAPS Y5, Y0
	VXORPS  Y10, Y10, Y10
	XORQ    R9, R9

ntaps1:
	MOVQ       (SI)(R9*8), R10
	ADDQ       R13, R10
	ADDQ       AX, R10
	VMASKMOVPS (R10), Y15, Y6
	VCMPPS     $3, Y6, Y6, Y4
	VORPS      Y4, Y10, Y10
	VMAXPS     Y6, Y0, Y0
	INCQ       R9
	CMPQ       R9, R8
	JLT        ntaps1
	VBLENDVPS  Y10, Y14, Y0, Y0
	TESTQ      DX, DX
	JZ         nstore1m
	VMOVUPS    Y0, (DI)
	JMP        nnext1

nstore1m:
	VMASKMOVPS Y0, Y15, (DI)

nnext1:
	ADDQ R11, DI
	ADDQ R12, R13
	DECQ BX
	JMP  nrows1

ndone:
	VZEROUPPER
	RET

// func deint2AVX2(even, odd, src *float32, rows, blocks, ldd, lds int)
//
// even[i] = src[2i], odd[i] = src[2i+1] for i < 8 blocks, in each of rows
// rows (ldd and lds apart, in floats): 16 floats read, their even and odd
// lanes gathered within each 128-bit half (VSHUFPS), the halves' pairs put
// in order (VPERMPD).
TEXT ·deint2AVX2(SB), NOSPLIT, $0-56
	MOVQ even+0(FP), DI
	MOVQ odd+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ rows+24(FP), BX
	MOVQ ldd+40(FP), R11
	SHLQ $2, R11
	MOVQ lds+48(FP), R12
	SHLQ $2, R12

d2row:
	TESTQ BX, BX
	JZ    d2end
	MOVQ  blocks+32(FP), CX
	XORQ  AX, AX // output offset, bytes
	XORQ  R9, R9 // source offset, bytes

d2loop:
	TESTQ   CX, CX
	JZ      d2next
	VMOVUPS (SI)(R9*1), Y0
	VMOVUPS 32(SI)(R9*1), Y1
	VSHUFPS $0x88, Y1, Y0, Y2 // s0 s2 s8 s10 | s4 s6 s12 s14
	VSHUFPS $0xdd, Y1, Y0, Y3 // s1 s3 s9 s11 | s5 s7 s13 s15
	VPERMPD $0xd8, Y2, Y2
	VPERMPD $0xd8, Y3, Y3
	VMOVUPS Y2, (DI)(AX*1)
	VMOVUPS Y3, (R8)(AX*1)
	ADDQ    $64, R9
	ADDQ    $32, AX
	DECQ    CX
	JMP     d2loop

d2next:
	ADDQ R11, DI
	ADDQ R11, R8
	ADDQ R12, SI
	DECQ BX
	JMP  d2row

d2end:
	VZEROUPPER
	RET
