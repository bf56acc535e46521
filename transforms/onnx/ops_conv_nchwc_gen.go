//go:build ignore

// ops_conv_nchwc_gen writes ops_conv_nchwc_amd64.s, the Go assembly kernels
// of the blocked convolution (ops_conv_nchwc.go), and
// ops_conv_nchwc_kernels_amd64.go, their declarations and tables. Run it
// after changing it:
//
//	go run ops_conv_nchwc_gen.go
//
// Each kernel computes np output positions (1 to 12, 24 sums at most on
// AVX-512; 1 to 6 on AVX2) of fb blocks of 16
// output channels (the kernels named ...C1 take the input channels one a
// step, not 16: an NCHW input's planes, each channel a "block"): it starts every sum at the bias (or, acc nonzero, at
// the sums already in y: the blocks of input channels taken in chunks),
// then for each block of
// 16 input channels, each kernel row and column, and each of the 16 input
// channels in turn, it loads the fb filter vectors of that channel and tap,
// broadcasts the input value under each of the np positions and
// multiplies-adds (one FMA, rounded once) into the fb x np accumulators.
// Every sum is thus taken in the same order (blocks, rows, columns,
// channels) whatever the kernel, the tile or the thread: the Go loop
// nchwcTileGo does the same steps. Where z is not nil, each sum has z's
// value at its place (z's blocks ldy bytes apart, as y's) added as it is
// stored: a residual read while the sums are made, not in a pass after.
// Each sum is then activated by *act (nchwcAct: lo, hi, alpha, beta
// float32s, then swish, a byte): clamped to [lo, hi] as the activation
// kernels clamp (VMAXPS with lo, VMINPS with hi, the sum the second
// source: a NaN sum stays NaN, -0 stays -0; Relu is [0, +Inf], Clip its
// bounds, none [-Inf, +Inf], which changes no value), or, swish set
// (AVX-512, no z), HardSwish: x times min(max(x*alpha + beta, lo), hi),
// lo and hi 0 and 1, as the activation kernel computes it.
//
// The input positions are np addresses xs bytes apart: SI, SI+R8, SI+2*R8,
// SI+R9 (3*R8), SI+4*R8 and SI+R10 (5*R8), then the same from R12
// (SI+6*R8), each input channel a 4-byte displacement from them.
//
// AVX-512 (nchwc512F<fb>P<np>): fb 1 to 4, one register a block (of one
// block, the broadcast within the FMA: VFMADD231PS.BCST), 24
// accumulators at most (Z0-Z23: 12 positions of 1 or 2 blocks, 8 of 3, 6
// of 4; at least 8 sums in flight cover the FMA's latency on both of a
// core's FMA units), the filter in Z24-Z27, the broadcasts in
// Z28 and Z29 in turn, the activation's bounds in Z30 and Z31. AVX2 (nchwc256P<np>): one block of 16 channels as two
// registers, 12 accumulators at most (Y0-Y11), the filter in Y12-Y13, the
// broadcasts in Y14 and Y15.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
)

// pos is the addressing of input position j, displacement d bytes:
// positions 6 to 11 from R12 (SI+6*R8) as 0 to 5 from SI.
func pos(j, d int) string {
	base := [...]string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R9*1)", "(SI)(R8*4)", "(SI)(R10*1)",
		"(R12)", "(R12)(R8*1)", "(R12)(R8*2)", "(R12)(R9*1)", "(R12)(R8*4)", "(R12)(R10*1)"}[j]
	return fmt.Sprintf("%d%s", d, base)
}

// Positions a kernel call takes: AVX-512's dense kernels keep fb x np
// sums in Z0-Z23 (np at most maxPositions), its depthwise kernels np sums
// in Z0-Z11; AVX2's kernels 6 positions (12 registers of sums).
const (
	maxPositions = 12
	sums512      = 24
	positions256 = 6
)

// positions512 is the most positions of an AVX-512 dense kernel of fb
// blocks.
func positions512(fb int) int { return min(maxPositions, sums512/fb) }

// base6 sets R12 to the 7th position's address where a kernel takes more
// than 6.
func base6(b *bytes.Buffer, np int) {
	if np > 6 {
		fmt.Fprintf(b, "\tLEAQ (SI)(R9*2), R12\n")
	}
}

const args = "y *float32, ldy int, x *float32, xs int, cbStride int, cbs int, kh int, kw int, rowStep int, colStep int, w *float32, bias *float32, acc int, z *float32, act *nchwcAct"

// prologue loads the pointers and strides and starts the loops; body
// emits the 16 channel steps.
func emit(b *bytes.Buffer, name string, np int, isa string, body func(), init, load func(), store func(mode int), filterBytes int) {
	fmt.Fprintf(b, "\n// func %s(%s)\n// Requires: %s\n", name, args, isa)
	fmt.Fprintf(b, "TEXT ·%s(SB), NOSPLIT, $0-120\n", name)
	p := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	p("MOVQ x+16(FP), DX")
	p("MOVQ xs+24(FP), R8")
	p("LEAQ (R8)(R8*2), R9")
	p("LEAQ (R8)(R8*4), R10")
	p("MOVQ w+80(FP), DI")
	p("MOVQ bias+88(FP), AX")
	// The activation's bounds, loaded now (their latency under the
	// sums'): AVX-512 keeps them in Z30 and Z31, AVX2 its pointer in R12
	// (its kernels of 6 positions at most use no second base).
	if isa == "AVX512F" {
		p("MOVQ act+112(FP), R13")
		p("VBROADCASTSS (R13), Z30")
		p("VBROADCASTSS 4(R13), Z31")
	} else {
		p("MOVQ act+112(FP), R12")
	}
	p("MOVQ acc+96(FP), CX")
	p("TESTQ CX, CX")
	p("JNZ %s_load", name)
	init()
	p("JMP %s_loaded", name)
	fmt.Fprintf(b, "%s_load:\n", name)
	p("MOVQ y+0(FP), SI")
	p("MOVQ ldy+8(FP), BX")
	load()
	fmt.Fprintf(b, "%s_loaded:\n", name)
	p("MOVQ colStep+72(FP), R13")
	p("MOVQ cbs+40(FP), AX")
	fmt.Fprintf(b, "%s_cb:\n", name)
	p("MOVQ DX, R11")
	p("MOVQ kh+48(FP), BX")
	fmt.Fprintf(b, "%s_kh:\n", name)
	p("MOVQ R11, SI")
	p("MOVQ kw+56(FP), CX")
	fmt.Fprintf(b, "%s_kw:\n", name)
	base6(b, np)
	body()
	p("ADDQ $%d, DI", filterBytes)
	p("ADDQ R13, SI")
	p("DECQ CX")
	p("JNZ %s_kw", name)
	p("ADDQ rowStep+64(FP), R11")
	p("DECQ BX")
	p("JNZ %s_kh", name)
	p("ADDQ cbStride+32(FP), DX")
	p("DECQ AX")
	p("JNZ %s_cb", name)
	p("MOVQ y+0(FP), SI")
	p("MOVQ ldy+8(FP), BX")
	wide := isa == "AVX512F" // HardSwish's write-out: AVX-512's kernels only
	if wide {
		p("MOVQ act+112(FP), R13")
		p("MOVBLZX 16(R13), AX")
		p("TESTL AX, AX")
		p("JNZ %s_swish", name)
	}
	p("MOVQ z+104(FP), R11")
	p("TESTQ R11, R11")
	p("JNZ %s_add", name)
	store(storeClamp)
	p("VZEROUPPER")
	p("RET")
	fmt.Fprintf(b, "%s_add:\n", name)
	store(storeAdd)
	p("VZEROUPPER")
	p("RET")
	if wide {
		fmt.Fprintf(b, "%s_swish:\n", name)
		store(storeSwish)
		p("VZEROUPPER")
		p("RET")
	}
}

// The kernels' write-outs: the sums clamped to [lo, hi]; z added, then
// clamped; HardSwish of the sums (x times x*alpha + beta clamped to [lo,
// hi] = [0, 1], each product and sum rounded, as the activation kernel
// computes it; AVX-512 only: AVX2's kernels have too few registers free,
// and the caller passes swish only to AVX-512's).
const (
	storeClamp = iota
	storeAdd
	storeSwish
)

// suffix names the kernels of chans input channels a step: "" for 16 (a
// block), "C1" for one (an NCHW input's planes, nchwcIn1).
func suffix(chans int) string {
	if chans == 1 {
		return "C1"
	}
	return ""
}

func avx512(b *bytes.Buffer, fb, np, chans int) {
	name := fmt.Sprintf("nchwc512F%dP%d%s", fb, np, suffix(chans))
	p := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	acc := func(f, j int) string { return fmt.Sprintf("Z%d", f*np+j) }
	emit(b, name, np, "AVX512F", func() {
		for i := range chans {
			for f := range fb {
				p("VMOVUPS %d(DI), Z%d", (i*fb+f)*64, 24+f)
			}
			for j := range np {
				if fb == 1 { // the broadcast within the FMA: one fused load-and-multiply-add a position
					p("VFMADD231PS.BCST %s, Z24, %s", pos(j, 4*i), acc(0, j))
					continue
				}
				t := 28 + j%2
				p("VBROADCASTSS %s, Z%d", pos(j, 4*i), t)
				for f := range fb {
					p("VFMADD231PS Z%d, Z%d, %s", 24+f, t, acc(f, j))
				}
			}
		}
	}, func() {
		for f := range fb {
			p("VMOVUPS %d(AX), Z%d", f*64, 24+f)
			for j := range np {
				p("VMOVAPS Z%d, %s", 24+f, acc(f, j))
			}
		}
	}, func() {
		for f := range fb {
			if f > 0 {
				p("ADDQ BX, SI")
			}
			for j := range np {
				p("VMOVUPS %d(SI), %s", j*64, acc(f, j))
			}
		}
	}, func(mode int) {
		if mode == storeSwish {
			p("VBROADCASTSS 8(R13), Z26")
			p("VBROADCASTSS 12(R13), Z27")
		}
		for f := range fb {
			if f > 0 {
				p("ADDQ BX, SI")
				if mode == storeAdd {
					p("ADDQ BX, R11")
				}
			}
			for j := range np {
				a := acc(f, j)
				switch mode {
				case storeSwish:
					swish512(p, a)
				case storeAdd:
					p("VADDPS %d(R11), %s, %s", j*64, a, a)
					fallthrough
				default:
					p("VMAXPS %s, Z30, %s", a, a)
					p("VMINPS %s, Z31, %s", a, a)
				}
				p("VMOVUPS %s, %d(SI)", a, j*64)
			}
		}
	}, chans*fb*64)
}

// swish512 emits HardSwish of register a in place: t = a*alpha (Z26) +
// beta (Z27), clamped to [Z30, Z31], then a*t (Z28 the temporary).
func swish512(p func(string, ...any), a string) {
	p("VMULPS Z26, %s, Z28", a)
	p("VADDPS Z27, Z28, Z28")
	p("VMAXPS Z28, Z30, Z28")
	p("VMINPS Z28, Z31, Z28")
	p("VMULPS Z28, %s, %s", a, a)
}

func avx2(b *bytes.Buffer, np, chans int) {
	name := fmt.Sprintf("nchwc256P%d%s", np, suffix(chans))
	p := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	emit(b, name, np, "AVX2, FMA", func() {
		for i := range chans {
			p("VMOVUPS %d(DI), Y12", i*64)
			p("VMOVUPS %d(DI), Y13", i*64+32)
			for j := range np {
				t := 14 + j%2
				p("VBROADCASTSS %s, Y%d", pos(j, 4*i), t)
				p("VFMADD231PS Y12, Y%d, Y%d", t, 2*j)
				p("VFMADD231PS Y13, Y%d, Y%d", t, 2*j+1)
			}
		}
	}, func() {
		p("VMOVUPS (AX), Y12")
		p("VMOVUPS 32(AX), Y13")
		for j := range np {
			p("VMOVAPS Y12, Y%d", 2*j)
			p("VMOVAPS Y13, Y%d", 2*j+1)
		}
	}, func() {
		for j := range np {
			p("VMOVUPS %d(SI), Y%d", j*64, 2*j)
			p("VMOVUPS %d(SI), Y%d", j*64+32, 2*j+1)
		}
	}, func(mode int) {
		add := mode == storeAdd
		p("VBROADCASTSS (R12), Y12")
		p("VBROADCASTSS 4(R12), Y13")
		for j := range np {
			for h := range 2 {
				a := 2*j + h
				if add {
					p("VADDPS %d(R11), Y%d, Y%d", j*64+32*h, a, a)
				}
				p("VMAXPS Y%d, Y12, Y%d", a, a)
				p("VMINPS Y%d, Y13, Y%d", a, a)
				p("VMOVUPS Y%d, %d(SI)", a, j*64+32*h)
			}
		}
	}, chans*64)
}

// transposes emits transpose16x16AVX512 and transpose8x8AVX2: dst[c*ldd +
// r] = src[r*lds + c] for a square block (ldd and lds in bytes).
func transposes(b *bytes.Buffer) {
	p := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	fmt.Fprintf(b, "\n// func transpose16x16AVX512(dst *float32, ldd int, src *float32, lds int)\n// Requires: AVX512F\n")
	fmt.Fprintf(b, "TEXT ·transpose16x16AVX512(SB), NOSPLIT, $0-32\n")
	p("MOVQ dst+0(FP), DI")
	p("MOVQ ldd+8(FP), DX")
	p("MOVQ src+16(FP), SI")
	p("MOVQ lds+24(FP), BX")
	for r := range 16 {
		p("VMOVUPS (SI), Z%d", r)
		if r < 15 {
			p("ADDQ BX, SI")
		}
	}
	// Unpack by 32 bits, then by 64: Z(4g+c) holds, in its 128-bit lane
	// L, rows 4g..4g+3 of column 4L+c.
	for r := 0; r < 16; r += 2 {
		p("VUNPCKLPS Z%d, Z%d, Z%d", r+1, r, 16+r)
		p("VUNPCKHPS Z%d, Z%d, Z%d", r+1, r, 17+r)
	}
	for g := 0; g < 4; g++ {
		a, c := 16+4*g, 18+4*g
		p("VUNPCKLPD Z%d, Z%d, Z%d", c, a, 4*g)
		p("VUNPCKHPD Z%d, Z%d, Z%d", c, a, 4*g+1)
		p("VUNPCKLPD Z%d, Z%d, Z%d", c+1, a+1, 4*g+2)
		p("VUNPCKHPD Z%d, Z%d, Z%d", c+1, a+1, 4*g+3)
	}
	// Lanes shuffled: columns c, 4+c, 8+c, 12+c from Z(c), Z(4+c), Z(8+c), Z(12+c).
	p("LEAQ (DX)(DX*2), R8")
	for c := range 4 {
		p("VSHUFF32X4 $0x44, Z%d, Z%d, Z16", 4+c, c)
		p("VSHUFF32X4 $0xEE, Z%d, Z%d, Z17", 4+c, c)
		p("VSHUFF32X4 $0x44, Z%d, Z%d, Z18", 12+c, 8+c)
		p("VSHUFF32X4 $0xEE, Z%d, Z%d, Z19", 12+c, 8+c)
		p("VSHUFF32X4 $0x88, Z18, Z16, Z20")
		p("VSHUFF32X4 $0xDD, Z18, Z16, Z21")
		p("VSHUFF32X4 $0x88, Z19, Z17, Z22")
		p("VSHUFF32X4 $0xDD, Z19, Z17, Z23")
		// Column s at dst + s*ldd: c, 4+c, 8+c, 12+c.
		p("MOVQ dst+0(FP), DI")
		switch c {
		case 1, 2:
			p("LEAQ (DI)(DX*%d), DI", c)
		case 3:
			p("ADDQ R8, DI")
		}
		for q := range 4 {
			p("VMOVUPS Z%d, (DI)", 20+q)
			if q < 3 {
				p("LEAQ (DI)(DX*4), DI")
			}
		}
	}
	p("VZEROUPPER")
	p("RET")

	fmt.Fprintf(b, "\n// func transpose8x8AVX2(dst *float32, ldd int, src *float32, lds int)\n// Requires: AVX\n")
	fmt.Fprintf(b, "TEXT ·transpose8x8AVX2(SB), NOSPLIT, $0-32\n")
	p("MOVQ dst+0(FP), DI")
	p("MOVQ ldd+8(FP), DX")
	p("MOVQ src+16(FP), SI")
	p("MOVQ lds+24(FP), BX")
	for r := range 8 {
		p("VMOVUPS (SI), Y%d", r)
		if r < 7 {
			p("ADDQ BX, SI")
		}
	}
	for r := 0; r < 8; r += 2 {
		p("VUNPCKLPS Y%d, Y%d, Y%d", r+1, r, 8+r)
		p("VUNPCKHPS Y%d, Y%d, Y%d", r+1, r, 9+r)
	}
	// Columns c | c+4 of rows 0-3 (Y0-Y3) and of rows 4-7 (Y4-Y7).
	for h := 0; h < 2; h++ {
		a := 8 + 4*h
		p("VSHUFPS $0x44, Y%d, Y%d, Y%d", a+2, a, 4*h)
		p("VSHUFPS $0xEE, Y%d, Y%d, Y%d", a+2, a, 4*h+1)
		p("VSHUFPS $0x44, Y%d, Y%d, Y%d", a+3, a+1, 4*h+2)
		p("VSHUFPS $0xEE, Y%d, Y%d, Y%d", a+3, a+1, 4*h+3)
	}
	for c := range 4 {
		p("VPERM2F128 $0x20, Y%d, Y%d, Y%d", 4+c, c, 8+c)
		p("VPERM2F128 $0x31, Y%d, Y%d, Y%d", 4+c, c, 12+c)
	}
	for s := range 8 {
		reg := 8 + s
		if s >= 4 {
			reg = 12 + s - 4
		}
		p("VMOVUPS Y%d, (DI)", reg)
		if s < 7 {
			p("ADDQ DX, DI")
		}
	}
	p("VZEROUPPER")
	p("RET")
}

const dwArgs = "y *float32, x *float32, xs int, kh int, kw int, rowStep int, colStep int, w *float32, bias *float32, act *nchwcAct"

// depthwise emits the depthwise kernels: np positions of one block of 16
// channels, each sum started at the bias, then for each tap (rows, then
// columns) the tap's 16 weights times the 16 channels under each position
// (one FMA a register: the input a memory operand), then activated by
// *act as the dense kernels (HardSwish on AVX-512 only). AVX-512: Z0-Z11
// the sums, Z29 the weights, Z30-Z31 the activation's bounds; AVX2:
// Y0-Y11 (two a position), Y12-Y13 the weights, Y14-Y15 the bounds.
func depthwise(b *bytes.Buffer, np int, wide bool) {
	p := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	name, isa := fmt.Sprintf("nchwcDw512P%d", np), "AVX512F"
	if !wide {
		name, isa = fmt.Sprintf("nchwcDw256P%d", np), "AVX2, FMA"
	}
	fmt.Fprintf(b, "\n// func %s(%s)\n// Requires: %s\n", name, dwArgs, isa)
	fmt.Fprintf(b, "TEXT ·%s(SB), NOSPLIT, $0-80\n", name)
	p("MOVQ x+8(FP), R11")
	p("MOVQ xs+16(FP), R8")
	p("LEAQ (R8)(R8*2), R9")
	p("LEAQ (R8)(R8*4), R10")
	p("MOVQ w+56(FP), DI")
	p("MOVQ bias+64(FP), AX")
	// The activation's bounds, loaded now (their latency under the
	// sums'): Z30 and Z31, or Y14 and Y15.
	p("MOVQ act+72(FP), R13")
	if wide {
		p("VBROADCASTSS (R13), Z30")
		p("VBROADCASTSS 4(R13), Z31")
	} else {
		p("VBROADCASTSS (R13), Y14")
		p("VBROADCASTSS 4(R13), Y15")
	}
	if wide {
		p("VMOVUPS (AX), Z29")
		for j := range np {
			p("VMOVAPS Z29, Z%d", j)
		}
	} else {
		p("VMOVUPS (AX), Y12")
		p("VMOVUPS 32(AX), Y13")
		for j := range np {
			p("VMOVAPS Y12, Y%d", 2*j)
			p("VMOVAPS Y13, Y%d", 2*j+1)
		}
	}
	p("MOVQ colStep+48(FP), R13")
	p("MOVQ kh+24(FP), BX")
	fmt.Fprintf(b, "%s_kh:\n", name)
	p("MOVQ R11, SI")
	p("MOVQ kw+32(FP), CX")
	fmt.Fprintf(b, "%s_kw:\n", name)
	base6(b, np)
	if wide {
		p("VMOVUPS (DI), Z29")
		for j := range np {
			p("VFMADD231PS %s, Z29, Z%d", pos(j, 0), j)
		}
	} else {
		p("VMOVUPS (DI), Y12")
		p("VMOVUPS 32(DI), Y13")
		for j := range np {
			p("VFMADD231PS %s, Y12, Y%d", pos(j, 0), 2*j)
			p("VFMADD231PS %s, Y13, Y%d", pos(j, 32), 2*j+1)
		}
	}
	p("ADDQ $64, DI")
	p("ADDQ R13, SI")
	p("DECQ CX")
	p("JNZ %s_kw", name)
	p("ADDQ rowStep+40(FP), R11")
	p("DECQ BX")
	p("JNZ %s_kh", name)
	p("MOVQ y+0(FP), SI")
	p("MOVQ act+72(FP), R13")
	if wide {
		p("MOVBLZX 16(R13), AX")
		p("TESTL AX, AX")
		p("JZ %s_clamp", name)
		p("VBROADCASTSS 8(R13), Z26")
		p("VBROADCASTSS 12(R13), Z27")
		for j := range np {
			swish512(p, fmt.Sprintf("Z%d", j))
			p("VMOVUPS Z%d, %d(SI)", j, 64*j)
		}
		p("VZEROUPPER")
		p("RET")
		fmt.Fprintf(b, "%s_clamp:\n", name)
	}
	for j := range np {
		if wide {
			p("VMAXPS Z%d, Z30, Z%d", j, j)
			p("VMINPS Z%d, Z31, Z%d", j, j)
			p("VMOVUPS Z%d, %d(SI)", j, 64*j)
		} else {
			for h := range 2 {
				p("VMAXPS Y%d, Y14, Y%d", 2*j+h, 2*j+h)
				p("VMINPS Y%d, Y15, Y%d", 2*j+h, 2*j+h)
				p("VMOVUPS Y%d, %d(SI)", 2*j+h, 64*j+32*h)
			}
		}
	}
	p("VZEROUPPER")
	p("RET")
}

func main() {
	out := flag.String("o", "ops_conv_nchwc_amd64.s", "the assembly file")
	decl := flag.String("go", "ops_conv_nchwc_kernels_amd64.go", "the Go file of its declarations")
	flag.Parse()
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by ops_conv_nchwc_gen.go; DO NOT EDIT.\n\n//go:build !purego\n\n#include \"textflag.h\"\n")
	for _, chans := range []int{16, 1} {
		for fb := 1; fb <= 4; fb++ {
			for np := 1; np <= positions512(fb); np++ {
				avx512(&b, fb, np, chans)
			}
		}
		for np := 1; np <= positions256; np++ {
			avx2(&b, np, chans)
		}
	}
	for np := 1; np <= maxPositions; np++ {
		depthwise(&b, np, true)
	}
	for np := 1; np <= positions256; np++ {
		depthwise(&b, np, false)
	}
	transposes(&b)
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	var g bytes.Buffer
	fmt.Fprintf(&g, "// Code generated by ops_conv_nchwc_gen.go; DO NOT EDIT.\n\n//go:build !purego\n\npackage onnx\n\n")
	fmt.Fprintf(&g, "// nchwcKernel is the signature of the blocked convolution's kernels\n// (strides and ldy in bytes).\ntype nchwcKernel func(%s)\n\n", args)
	for _, chans := range []int{16, 1} {
		sfx := suffix(chans)
		fmt.Fprintf(&g, "// nchwc512%s are the AVX-512 kernels of %d input channels a step by blocks (fb-1) and positions (np-1), nil past 24 sums.\nvar nchwc512%s = [4][%d]nchwcKernel{\n", sfx, chans, sfx, maxPositions)
		for fb := 1; fb <= 4; fb++ {
			fmt.Fprintf(&g, "\t{")
			for np := 1; np <= positions512(fb); np++ {
				if np > 1 {
					fmt.Fprintf(&g, ", ")
				}
				fmt.Fprintf(&g, "nchwc512F%dP%d%s", fb, np, sfx)
			}
			fmt.Fprintf(&g, "},\n")
		}
		fmt.Fprintf(&g, "}\n\n// nchwc256%s are the AVX2 kernels (one block) of %d input channels a step by positions (np-1).\nvar nchwc256%s = [%d]nchwcKernel{", sfx, chans, sfx, positions256)
		for np := 1; np <= positions256; np++ {
			if np > 1 {
				fmt.Fprintf(&g, ", ")
			}
			fmt.Fprintf(&g, "nchwc256P%d%s", np, sfx)
		}
		fmt.Fprintf(&g, "}\n\n")
	}
	fmt.Fprintf(&g, "// nchwcDwKernel is the signature of the depthwise kernels (strides in\n// bytes).\ntype nchwcDwKernel func(%s)\n\n", dwArgs)
	for _, isa := range []string{"512", "256"} {
		n := map[string]int{"512": maxPositions, "256": positions256}[isa]
		fmt.Fprintf(&g, "// nchwcDw%s are the depthwise kernels by positions (np-1).\nvar nchwcDw%s = [%d]nchwcDwKernel{", isa, isa, n)
		for np := 1; np <= n; np++ {
			if np > 1 {
				fmt.Fprintf(&g, ", ")
			}
			fmt.Fprintf(&g, "nchwcDw%sP%d", isa, np)
		}
		fmt.Fprintf(&g, "}\n\n")
	}
	for _, chans := range []int{16, 1} {
		for fb := 1; fb <= 4; fb++ {
			for np := 1; np <= positions512(fb); np++ {
				fmt.Fprintf(&g, "\n//go:noescape\nfunc nchwc512F%dP%d%s(%s)\n", fb, np, suffix(chans), args)
			}
		}
		for np := 1; np <= positions256; np++ {
			fmt.Fprintf(&g, "\n//go:noescape\nfunc nchwc256P%d%s(%s)\n", np, suffix(chans), args)
		}
	}
	for _, isa := range []string{"512", "256"} {
		for np := 1; np <= map[string]int{"512": maxPositions, "256": positions256}[isa]; np++ {
			fmt.Fprintf(&g, "\n//go:noescape\nfunc nchwcDw%sP%d(%s)\n", isa, np, dwArgs)
		}
	}
	fmt.Fprintf(&g, "\n//go:noescape\nfunc transpose16x16AVX512(dst *float32, ldd int, src *float32, lds int)\n")
	fmt.Fprintf(&g, "\n//go:noescape\nfunc transpose8x8AVX2(dst *float32, ldd int, src *float32, lds int)\n")
	src, err := format.Source(g.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*decl, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
