package onnx

import "math"

// unaryMore32 computes ops_unary.go's operators on float32s: Floor, Ceil,
// Round and ThresholdedRelu as unaryFunc does (the same bits), without its
// call per element (whole vectors on roundVec's and threshVec's kernels);
// Softsign in float32, x / (1 + |x|) with the sum and the quotient each
// rounded as ONNX Runtime computes it (whole vectors on softsignVec's
// kernel, the same bits); the others in float32 without branches on
// the values (random signs mispredict): Gelu on erff's vector loop, Gelu's
// tanh form as x σ(2u) on the vector sigmoid, Selu and Celu on expm1Block32
// (whole vectors in one AVX2 pass, eluVec, the same bits),
// Softplus and Mish on expf's vector loop and log1p01 (Mish's tanh on
// tanhInto), Sin and Cos on float32 polynomials (sinCosInto, in AVX2 where there is one); each within
// 1e-6 (relative above 1) of unaryFunc's float64 value (TestUnaryMore32).
func unaryMore32(k *ewUnary, x, y []float32) {
	y = y[:len(x)]
	a := float64(k.alpha)
	switch k.op {
	case unFloor:
		for i := roundVec(y, x, 1); i < len(x); i++ {
			y[i] = float32(math.Floor(float64(x[i])))
		}
	case unCeil:
		for i := roundVec(y, x, 2); i < len(x); i++ {
			y[i] = float32(math.Ceil(float64(x[i])))
		}
	case unRound:
		for i := roundVec(y, x, 0); i < len(x); i++ {
			y[i] = float32(math.RoundToEven(float64(x[i])))
		}
	case unThresholdedRelu: // without a branch: the signs are a coin toss
		af := float32(a)
		for i := threshVec(y, x, af); i < len(x); i++ {
			v := x[i]
			keep := -(b2u(v != v) | b2u(v > af))
			y[i] = math.Float32frombits(math.Float32bits(v) & keep)
		}
	case unSoftsign: // in float32, as ONNX Runtime computes it
		for i := softsignVec(y, x); i < len(x); i++ {
			v := x[i]
			y[i] = v / (1 + math.Float32frombits(math.Float32bits(v)&^(1<<31)))
		}
	case unSelu, unCelu: // whole vectors in one pass where there is a kernel
		n := eluVec(y, x, k.alpha, k.beta, k.op == unCelu)
		blocks32(x[n:], y[n:], func(x, t, y []float32) { unaryBlock32(k, x, t, y) })
	case unGelu: // whole vectors in one pass where there is a kernel
		n := geluVecF32(y, x)
		blocks32(x[n:], y[n:], func(x, t, y []float32) { unaryBlock32(k, x, t, y) })
	case unGeluTanh: // whole vectors in one pass, to the first NaN
		step := len(x)
		if expWidth > 0 {
			step = 8
		}
		for lo := 0; lo < len(x); {
			if n := geluTanhVecF32(y[lo:], x[lo:]); n > 0 {
				lo += n
				continue
			}
			hi := min(len(x), lo+step)
			blocks32(x[lo:hi], y[lo:hi], func(x, t, y []float32) { unaryBlock32(k, x, t, y) })
			lo = hi
		}
	case unSoftplus, unMish:
		blocks32(x, y, func(x, t, y []float32) { unaryBlock32(k, x, t, y) })
	case unSin, unCos:
		sinCosInto(y, x, k.op == unCos)
	default:
		unaryMore(k, x, y)
	}
}

// Gelu's constants: 1/√2, and for the tanh form 0.044715 and 2√(2/π).
const (
	geluScale     float32 = 0.70710678118654752440
	geluCubic     float32 = 0.044715
	geluTanhScale float32 = 2 * 0.79788456080286535588
)

// blocks32 calls f on blocks of x and y with a scratch block t of the
// same length.
func blocks32(x, y []float32, f func(x, t, y []float32)) {
	var buf [256]float32
	for lo := 0; lo < len(x); lo += len(buf) {
		hi := min(len(x), lo+len(buf))
		f(x[lo:hi], buf[:hi-lo], y[lo:hi])
	}
}

// unaryBlock32 computes k's operation on a block (t: scratch of its
// length), without branches on the values.
func unaryBlock32(k *ewUnary, x, t, y []float32) {
	switch k.op {
	case unSelu: // γ x above 0, γ α (e^x - 1) below
		a, b := float32(k.alpha), float64(k.beta)
		for i, v := range x {
			t[i] = min(v, 0)
		}
		expm1Block32(t)
		for i, v := range x {
			pos := -b2u(v > 0)
			neg := float32(b) * (a * t[i])
			y[i] = math.Float32frombits(math.Float32bits(float32(b*float64(v)))&pos | math.Float32bits(neg)&^pos)
		}
	case unCelu: // max(0, x) + min(0, α (e^(x/α) - 1))
		a := float32(k.alpha)
		for i, v := range x {
			t[i] = min(v/a, 0)
		}
		expm1Block32(t)
		for i, v := range x {
			y[i] = max(v, 0) + a*t[i]
		}
	case unGelu: // x/2 (1 + erf(x/√2))
		for i, v := range x {
			t[i] = v * geluScale
		}
		erfInto(t, t)
		for i, v := range x {
			y[i] = 0.5 * v * (1 + t[i])
		}
	case unGeluTanh: // x/2 (1 + tanh u) = x σ(2u), u = √(2/π) (x + 0.044715 x³)
		for i, v := range x {
			// The conversion keeps the product from being fused with the
			// sum (geluTanhAVX2 rounds each).
			t[i] = geluTanhScale * (v + float32(geluCubic*v*v*v))
		}
		sigmoidInto(t, t)
		for i, v := range x {
			y[i] = v * t[i]
		}
	case unSoftplus:
		softplusBlock32(x, t, y)
	case unMish: // x tanh(softplus(x))
		softplusBlock32(x, t, t)
		tanhInto(t, t)
		for i, v := range x {
			y[i] = v * t[i]
		}
	}
}

// softplusBlock32 writes log(1 + e^x) to y (y may be t, not x): max(x, 0)
// + log1p(e^-|x|), the exponentials on expf's vector loop, log1p by
// log1p01. NaN stays NaN (max keeps it).
func softplusBlock32(x, t, y []float32) {
	for i, v := range x {
		t[i] = math.Float32frombits(math.Float32bits(v) | 1<<31) // -|x|
	}
	expSubInto(t, t, 0)
	for i, v := range x {
		y[i] = max(v, 0) + log1p01(t[i])
	}
}

// log1p01 is log(1 + e) for e in [0, 1]: 2 atanh(s), s = e / (2 + e) in
// [0, 1/3], by its series to s^15 (the remainder below 2e-9 relative),
// without cancellation for small e.
func log1p01(e float32) float32 {
	s := e / (2 + e)
	z := s * s
	return 2 * s * (1 + z*(1.0/3+z*(1.0/5+z*(1.0/7+z*(1.0/9+z*(1.0/11+z*(1.0/13+z*(1.0/15))))))))
}

// expm1Block32 writes e^x - 1 over x (x <= 0, or NaN) in place: Taylor's
// polynomial of degree 8 above -0.35 (as expm1f), expf's vector loop
// below, chosen without a branch.
func expm1Block32(x []float32) {
	var buf [256]float32
	for lo := 0; lo < len(x); lo += len(buf) {
		xs := x[lo:min(len(x), lo+len(buf))]
		e := buf[:len(xs)]
		expSubInto(e, xs, 0)
		for i, v := range xs {
			p := v * (1 + v*(1.0/2+v*(1.0/6+v*(1.0/24+v*(1.0/120+v*(1.0/720+v*(1.0/5040+v*(1.0/40320))))))))
			small := -b2u(v > -0.35)
			xs[i] = math.Float32frombits(math.Float32bits(p)&small | math.Float32bits(e[i]-1)&^small)
		}
	}
}

// b2u is 1 for true, 0 for false.
func b2u(b bool) uint32 {
	var u uint32
	if b {
		u = 1
	}
	return u
}

// sinCosInto writes sin x[i] (cos x[i] with cos) to y[i]: whole vectors
// in sinCosVec's kernel where there is one (the same bits), the rest by
// sinCos1.
func sinCosInto(y, x []float32, cos bool) {
	y = y[:len(x)]
	c := b2u(cos)
	for i := 0; i < len(x); {
		i += sinCosVec(y[i:], x[i:], cos)
		for end := min(i+8, len(x)); i < end; i++ {
			y[i] = sinCos1(x[i], c)
		}
	}
}

// sinCos1 is sin x (cos x with c 1), from Cephes' sinf and cosf: x
// reduced by multiples of π/4 in float32 (π/4 in three parts, Cody and
// Waite's, exact enough below 8192), then their float32 polynomials on
// [-π/4, π/4], the octant's polynomial and sign chosen without a branch;
// from 8192 on, and for NaN and ±Inf, math's float64 functions.
func sinCos1(xv float32, c uint32) float32 {
	a := math.Float32frombits(math.Float32bits(xv) &^ (1 << 31))
	if !(a < 8192) {
		if c == 1 {
			return float32(math.Cos(float64(xv)))
		}
		return float32(math.Sin(float64(xv)))
	}
	j := uint32(a * (4 / math.Pi))
	j += j & 1
	fj := float32(j)
	r := ((a - fj*0.78515625) - fj*2.4187564849853515625e-4) - fj*3.77489497744594108e-8 // in [-π/4, π/4]
	// The sign: sin's of x's; flipped in octants 4 to 7; for cos,
	// flipped in octants 2, 3, 6 and 7 too.
	neg := (math.Float32bits(xv)>>31)&^c ^ (j>>2)&1 ^ c&(j>>1)&1
	z := r * r
	sp := ((-1.9515295891e-4*z+8.3321608736e-3)*z-1.6666654611e-1)*z*r + r
	cp := ((2.443315711809948e-5*z-1.388731625493765e-3)*z+4.166664568298827e-2)*z*z - 0.5*z + 1
	// cos's polynomial in sin's octant 2 (mod 4: j is even) and cos's 0.
	useCos := -((j^j>>1)&1 ^ c)
	v := math.Float32bits(cp)&useCos | math.Float32bits(sp)&^useCos
	return math.Float32frombits(v ^ neg<<31)
}
