//go:build !purego

#include "textflag.h"

// The TOA and fused TOA+NDVI vector kernels: AVX-512 (16 pixels a step) and
// AVX2 (8 pixels a step). Each step computes exactly what toaValue and
// ndviPlane compute per pixel, in the same order and with the same
// roundings: the DN widened to float64, times scale (rounded), plus offset
// (rounded; no FMA), rounded to float32; NaN (nan32's bits, 0x7fc00000)
// where the DN is 0; NDVI = (n - r) / (n + r) in float32, NaN where
// n + r == 0.
//
// With nt set the planes are written with non-temporal stores (the caller
// checks the alignment: 64 bytes for AVX-512, 32 for AVX2), which do not
// read the destination lines first; an SFENCE at the end orders them.

// TOA16 computes the reflectances of the 16 DNs at src into zout (yout is
// its lower half), with scale and offset broadcast in s and o and NaN in
// Z11; Z0, Z2 and K1 are scratch.
#define TOA16(src, s, o, zout, yout) \
	VPMOVZXWD src, Z0; \
	VCVTDQ2PD Y0, zout; \
	VEXTRACTI64X4 $1, Z0, Y2; \
	VCVTDQ2PD Y2, Z2; \
	VMULPD s, zout, zout; \
	VADDPD o, zout, zout; \
	VMULPD s, Z2, Z2; \
	VADDPD o, Z2, Z2; \
	VCVTPD2PS zout, yout; \
	VCVTPD2PS Z2, Y2; \
	VINSERTF64X4 $1, Y2, zout, zout; \
	VPTESTNMD Z0, Z0, K1; \
	VMOVAPS Z11, K1, zout

// NDVI16 computes the NDVI of red Z1 and near-infrared Z4 into Z6; Z5 and
// K2 are scratch, Z10 holds zeros.
#define NDVI16 \
	VADDPS Z1, Z4, Z5; \
	VSUBPS Z1, Z4, Z6; \
	VDIVPS Z5, Z6, Z6; \
	VCMPPS $0, Z10, Z5, K2; \
	VMOVAPS Z11, K2, Z6

// TOA8 is TOA16 for 8 DNs with AVX2, into yout (xout its lower half); Y0,
// Y2 and Y3 are scratch.
#define TOA8(src, s, o, yout, xout) \
	VPMOVZXWD src, Y0; \
	VCVTDQ2PD X0, yout; \
	VEXTRACTI128 $1, Y0, X2; \
	VCVTDQ2PD X2, Y2; \
	VMULPD s, yout, yout; \
	VADDPD o, yout, yout; \
	VMULPD s, Y2, Y2; \
	VADDPD o, Y2, Y2; \
	VCVTPD2PSY yout, xout; \
	VCVTPD2PSY Y2, X2; \
	VINSERTF128 $1, X2, yout, yout; \
	VPCMPEQD Y10, Y0, Y3; \
	VBLENDVPS Y3, Y11, yout, yout

// NDVI8 is NDVI16 with AVX2: red Y1, near-infrared Y4, into Y6.
#define NDVI8 \
	VADDPS Y1, Y4, Y5; \
	VSUBPS Y1, Y4, Y6; \
	VDIVPS Y5, Y6, Y6; \
	VCMPPS $0, Y10, Y5, Y7; \
	VBLENDVPS Y7, Y11, Y6, Y6

// func toaAVX512(dst *float32, dn *uint16, n int, scale, offset float64, nt bool)
TEXT ·toaAVX512(SB), NOSPLIT, $0-41
	MOVQ dst+0(FP), DI
	MOVQ dn+8(FP), R8
	MOVQ n+16(FP), CX
	VBROADCASTSD scale+24(FP), Z12
	VBROADCASTSD offset+32(FP), Z13
	MOVL $0x7fc00000, AX
	VPBROADCASTD AX, Z11
	XORQ AX, AX
	TESTQ CX, CX
	JLE toa512_done
	CMPB nt+40(FP), $0
	JNE toa512_nt
toa512_loop:
	TOA16((R8)(AX*2), Z12, Z13, Z1, Y1)
	VMOVUPS Z1, (DI)(AX*4)
	ADDQ $16, AX
	CMPQ AX, CX
	JLT toa512_loop
	JMP toa512_done
toa512_nt:
	TOA16((R8)(AX*2), Z12, Z13, Z1, Y1)
	VMOVNTPS Z1, (DI)(AX*4)
	ADDQ $16, AX
	CMPQ AX, CX
	JLT toa512_nt
	SFENCE
toa512_done:
	VZEROUPPER
	RET

// func toaNDVIAVX512(red, nir, ndvi *float32, dnRed, dnNIR *uint16, n int, sr, or, sn, on float64, nt bool)
TEXT ·toaNDVIAVX512(SB), NOSPLIT, $0-81
	MOVQ red+0(FP), DI
	MOVQ nir+8(FP), SI
	MOVQ ndvi+16(FP), DX
	MOVQ dnRed+24(FP), R8
	MOVQ dnNIR+32(FP), R9
	MOVQ n+40(FP), CX
	VBROADCASTSD sr+48(FP), Z12
	VBROADCASTSD or+56(FP), Z13
	VBROADCASTSD sn+64(FP), Z14
	VBROADCASTSD on+72(FP), Z15
	MOVL $0x7fc00000, AX
	VPBROADCASTD AX, Z11
	VPXORD Z10, Z10, Z10
	XORQ AX, AX
	TESTQ CX, CX
	JLE toandvi512_done
	CMPB nt+80(FP), $0
	JNE toandvi512_nt
toandvi512_loop:
	TOA16((R8)(AX*2), Z12, Z13, Z1, Y1)
	TOA16((R9)(AX*2), Z14, Z15, Z4, Y4)
	NDVI16
	VMOVUPS Z1, (DI)(AX*4)
	VMOVUPS Z4, (SI)(AX*4)
	VMOVUPS Z6, (DX)(AX*4)
	ADDQ $16, AX
	CMPQ AX, CX
	JLT toandvi512_loop
	JMP toandvi512_done
toandvi512_nt:
	TOA16((R8)(AX*2), Z12, Z13, Z1, Y1)
	TOA16((R9)(AX*2), Z14, Z15, Z4, Y4)
	NDVI16
	VMOVNTPS Z1, (DI)(AX*4)
	VMOVNTPS Z4, (SI)(AX*4)
	VMOVNTPS Z6, (DX)(AX*4)
	ADDQ $16, AX
	CMPQ AX, CX
	JLT toandvi512_nt
	SFENCE
toandvi512_done:
	VZEROUPPER
	RET

// func toaAVX2(dst *float32, dn *uint16, n int, scale, offset float64, nt bool)
TEXT ·toaAVX2(SB), NOSPLIT, $0-41
	MOVQ dst+0(FP), DI
	MOVQ dn+8(FP), R8
	MOVQ n+16(FP), CX
	VBROADCASTSD scale+24(FP), Y12
	VBROADCASTSD offset+32(FP), Y13
	MOVL $0x7fc00000, AX
	MOVL AX, X11
	VPBROADCASTD X11, Y11
	VPXOR Y10, Y10, Y10
	XORQ AX, AX
	TESTQ CX, CX
	JLE toa2_done
	CMPB nt+40(FP), $0
	JNE toa2_nt
toa2_loop:
	TOA8((R8)(AX*2), Y12, Y13, Y1, X1)
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT toa2_loop
	JMP toa2_done
toa2_nt:
	TOA8((R8)(AX*2), Y12, Y13, Y1, X1)
	VMOVNTPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT toa2_nt
	SFENCE
toa2_done:
	VZEROUPPER
	RET

// func toaNDVIAVX2(red, nir, ndvi *float32, dnRed, dnNIR *uint16, n int, sr, or, sn, on float64, nt bool)
TEXT ·toaNDVIAVX2(SB), NOSPLIT, $0-81
	MOVQ red+0(FP), DI
	MOVQ nir+8(FP), SI
	MOVQ ndvi+16(FP), DX
	MOVQ dnRed+24(FP), R8
	MOVQ dnNIR+32(FP), R9
	MOVQ n+40(FP), CX
	VBROADCASTSD sr+48(FP), Y12
	VBROADCASTSD or+56(FP), Y13
	VBROADCASTSD sn+64(FP), Y14
	VBROADCASTSD on+72(FP), Y15
	MOVL $0x7fc00000, AX
	MOVL AX, X11
	VPBROADCASTD X11, Y11
	VPXOR Y10, Y10, Y10
	XORQ AX, AX
	TESTQ CX, CX
	JLE toandvi2_done
	CMPB nt+80(FP), $0
	JNE toandvi2_nt
toandvi2_loop:
	TOA8((R8)(AX*2), Y12, Y13, Y1, X1)
	TOA8((R9)(AX*2), Y14, Y15, Y4, X4)
	NDVI8
	VMOVUPS Y1, (DI)(AX*4)
	VMOVUPS Y4, (SI)(AX*4)
	VMOVUPS Y6, (DX)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT toandvi2_loop
	JMP toandvi2_done
toandvi2_nt:
	TOA8((R8)(AX*2), Y12, Y13, Y1, X1)
	TOA8((R9)(AX*2), Y14, Y15, Y4, X4)
	NDVI8
	VMOVNTPS Y1, (DI)(AX*4)
	VMOVNTPS Y4, (SI)(AX*4)
	VMOVNTPS Y6, (DX)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT toandvi2_nt
	SFENCE
toandvi2_done:
	VZEROUPPER
	RET
