//go:build !purego

package onnx

import (
	"math"
	"unsafe"
)

// expAVX2 is expf's vector kernel (numeric_amd64.s).
//
//go:noescape
func expAVX2(y, x *float32, n int, sub float32, tab *[17][8]float32) int

// expTab holds expAVX2's constants, each 8 times (a row a vector), made
// from expf's own so that the two cannot drift apart.
var expTab = func() (t [17][8]float32) {
	f := []float32{log2eF, roundF, ln2Hi, ln2Lo, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1, 88, -87, -105, 0x1p-64,
		math.Float32frombits(0x4b400000 - 127), math.Float32frombits(0x4b400000 - 127 - 64)}
	for i, v := range f {
		for j := range t[i] {
			t[i][j] = v
		}
	}
	return t
}()

// erfAVX2 is erff's vector kernel (numeric_amd64.s), and Gelu's with
// gelu 1: n a multiple of 8.
//
//go:noescape
func erfAVX2(y, x *float32, n int, tab *[36][8]float32, gelu int)

// erfTab holds erfAVX2's constants, each 8 times: erff's (numeric.go,
// written as erff writes them), then expf's, then Gelu's 1/√2 and 1/2.
var erfTab = func() (t [36][8]float32) {
	f := []float32{math.Float32frombits(0x7fffffff), math.Float32frombits(0x80000000), 1, 4, 2.5,
		1.1283792, -0.37612629, 0.11283626, -0.0268554, 0.0051912186, -0.00080348464, 7.9334939e-05,
		0.21080637, -0.074347556, 0.024937805, -0.0079996092, 0.0024674453, -0.00073856639, 0.00021110837, -5.3845422e-05, 1.5317162e-05, -6.3341831e-06, 1.4981339e-06,
		log2eF, roundF, ln2Hi, ln2Lo, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2,
		math.Float32frombits(0x4b400000 - 127), geluScale, 0.5}
	for i, v := range f {
		for j := range t[i] {
			t[i][j] = v
		}
	}
	return t
}()

// erfVecF32 writes erff(x[i]) to y[i] for the whole vectors of x and
// returns how many (0 without a vector kernel). len(y) >= len(x); y may be
// x.
func erfVecF32(y, x []float32) int {
	n := len(x) &^ 7
	if expWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	erfAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n, &erfTab, 0)
	return n
}

// geluVecF32 writes Gelu's 0.5 x[i] (1 + erff(x[i]/√2)) to y[i] for the
// whole vectors of x and returns how many (0 without a vector kernel), the
// same bits as unaryBlock32. len(y) >= len(x); y may be x.
func geluVecF32(y, x []float32) int {
	n := len(x) &^ 7
	if expWidth == 0 || n == 0 {
		return 0
	}
	_ = y[n-1]
	erfAVX2(unsafe.SliceData(y), unsafe.SliceData(x), n, &erfTab, 1)
	return n
}

// geluErfAVX2 is the fused epilogues' GELU kernel (numeric_amd64.s): n a
// multiple of 8.
//
//go:noescape
func geluErfAVX2(y, x *float32, n int, tab *[36][8]float32, c, half float32, mode int)

// geluErfVecF32 computes g.apply of the whole vectors of y in place and
// returns how many (0 without a vector kernel): the same bits.
func geluErfVecF32(y []float32, g *geluErf) int {
	n := len(y) &^ 7
	if expWidth == 0 || n == 0 {
		return 0
	}
	mode := 0
	if g.div {
		mode |= 1
	}
	if g.halfFirst {
		mode |= 2
	}
	if tanhWide && n >= 16 { // 16 lanes a step, then 8
		w := n &^ 15
		geluErfAVX512(unsafe.SliceData(y), unsafe.SliceData(y), w, erfTab16, g.c, g.half, mode)
		if w == n {
			return n
		}
		y = y[w:]
		n -= w
		geluErfAVX2(unsafe.SliceData(y), unsafe.SliceData(y), n, &erfTab, g.c, g.half, mode)
		return w + n
	}
	geluErfAVX2(unsafe.SliceData(y), unsafe.SliceData(y), n, &erfTab, g.c, g.half, mode)
	return n
}

// geluErfAVX512 is geluErfAVX2 at 16 lanes (numeric_avx512_amd64.s): n a
// multiple of 16.
//
//go:noescape
func geluErfAVX512(y, x *float32, n int, tab *[36][16]float32, c, half float32, mode int)

// erfTab16 is erfTab's rows, 16 copies each, for geluErfAVX512 (a row a
// cache line: aligned64).
var erfTab16 = aligned64(func() (t [36][16]float32) {
	for i := range t {
		for j := range t[i] {
			t[i][j] = erfTab[i][0]
		}
	}
	return t
}())

// geluTanhAVX2 is Gelu's tanh form's vector kernel (numeric_amd64.s).
//
//go:noescape
func geluTanhAVX2(y, x *float32, n int, tab *[17][8]float32, c, k float32) int

// geluTanhVecF32 writes Gelu's tanh form of x[i] to y[i] for a prefix of
// x in whole vectors and returns its length (0 without a vector kernel),
// the same bits as unaryBlock32: it stops at the first vector with a NaN.
// len(y) >= len(x); y may be x.
func geluTanhVecF32(y, x []float32) int {
	if expWidth == 0 || len(x) < 8 {
		return 0
	}
	_ = y[len(x)-1]
	return geluTanhAVX2(unsafe.SliceData(y), unsafe.SliceData(x), len(x), &expTab, geluCubic, geluTanhScale)
}

// sigmoidAVX2 is sigmoidInto's vector kernel (numeric_amd64.s).
//
//go:noescape
func sigmoidAVX2(y, x *float32, n int, tab *[17][8]float32, silu int) int

// sigmoidVecF32 writes sigmoidf(x[i]) to y[i] for a prefix of x in whole
// vectors and returns its length (0 without a vector kernel): it stops at
// the first vector with a NaN. len(y) >= len(x); y may be x.
func sigmoidVecF32(y, x []float32) int {
	if expWidth == 0 || len(x) < 8 {
		return 0
	}
	_ = y[len(x)-1]
	return sigmoidVec(y, x, 0)
}

// siluVecF32 replaces y[i] by y[i] * sigmoidf(y[i]) (siluInPlace's bits)
// for a prefix of y in whole vectors and returns its length (0 without a
// vector kernel): it stops at the first vector with a NaN.
func siluVecF32(y []float32) int {
	if expWidth == 0 || len(y) < 8 {
		return 0
	}
	return sigmoidVec(y, y, 1)
}

// sigmoidVec runs sigmoidAVX512 (where tanhWide says) then sigmoidAVX2 on
// what it leaves.
func sigmoidVec(y, x []float32, silu int) int {
	n := 0
	if tanhWide && len(x) >= 16 {
		if n = sigmoidAVX512(unsafe.SliceData(y), unsafe.SliceData(x), len(x), tanhTab16, silu); n == len(x) {
			return n
		}
	}
	return n + sigmoidAVX2(unsafe.SliceData(y[n:]), unsafe.SliceData(x[n:]), len(x)-n, &expTab, silu)
}

// sigmoidAVX512 is sigmoidAVX2 at 16 lanes (numeric_avx512_amd64.s).
//
//go:noescape
func sigmoidAVX512(y, x *float32, n int, tab *[25][16]float32, silu int) int

// expWidth is the lanes of expf's vector kernel: 8 wherever AVX2 is (the
// AVX2 kernel serves AVX-512 CPUs too); a variable for the tests.
var expWidth = min(simdWidth, 8)

// expSubF32 writes expf(x[i] - sub) to y[i] for a prefix of x in whole
// vectors, and returns its length (0 without a vector kernel): it stops at
// the first vector with a value, less sub, over 88 or NaN. len(y) >=
// len(x); y may be x.
func expSubF32(y, x []float32, sub float32) int {
	if expWidth == 0 || len(x) < 8 {
		return 0
	}
	_ = y[len(x)-1]
	return expAVX2(unsafe.SliceData(y), unsafe.SliceData(x), len(x), sub, &expTab)
}

// tanhAVX2 is tanhInto's vector kernel (numeric_amd64.s).
//
//go:noescape
func tanhAVX2(y, x *float32, n int, tab *[26][8]float32) int

// tanhTab holds tanhAVX2's constants, each 8 times: expTab's rows, then
// 10, 0.3, -2 and tanhf's series coefficients, as tanhf writes them.
var tanhTab = func() (t [26][8]float32) {
	copy(t[:], expTab[:])
	f := []float32{10, 0.3, -2, -1382.0 / 155925, 62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3}
	for i, v := range f {
		for j := range t[len(expTab)+i] {
			t[len(expTab)+i][j] = v
		}
	}
	return t
}()

// tanhVecF32 writes tanhf(x[i]) to y[i] for a prefix of x in whole
// vectors and returns its length (0 without a vector kernel): it stops at
// the first vector with a NaN. len(y) >= len(x); y may be x.
func tanhVecF32(y, x []float32) int {
	if expWidth == 0 || len(x) < 8 {
		return 0
	}
	_ = y[len(x)-1]
	n := 0
	if tanhWide && len(x) >= 16 { // 16 lanes a step, the rest 8
		if n = tanhAVX512(unsafe.SliceData(y), unsafe.SliceData(x), len(x), tanhTab16); n == len(x) {
			return n
		}
	}
	return n + tanhAVX2(unsafe.SliceData(y[n:]), unsafe.SliceData(x[n:]), len(x)-n, &tanhTab)
}

// tanhAVX512 is tanhAVX2 at 16 lanes (numeric_avx512_amd64.s).
//
//go:noescape
func tanhAVX512(y, x *float32, n int, tab *[25][16]float32) int

// tanhWide reports whether tanhVecF32 runs 16 lanes at a time (AVX-512;
// HasAVX512F also checks that the OS saves the registers); a variable for
// the tests.
var tanhWide = simdWidth == 16

// tanhTab16 is tanhTab's rows, 16 copies each, for tanhAVX512 (a row a
// cache line: aligned64).
var tanhTab16 = aligned64(func() (t [25][16]float32) {
	for i := range t {
		for j := range t[i] {
			t[i][j] = tanhTab[i][0]
		}
	}
	return t
}())
