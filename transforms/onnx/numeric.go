package onnx

import "math"

// The numeric helpers that several operators share: the extremes of an
// element type, NaN-propagating max and min, a float64 sum, Go's
// conversion of slices, Cast's truncation of floats to integers, and fast
// float32 functions.

// lowest and highest are T's extreme values (-Inf and +Inf for floats:
// no bound).
func lowest[T numElem]() T {
	var z T
	switch any(z).(type) {
	case float32, float64:
		return T(math.Inf(-1))
	case int8, int16, int32, int64:
		return -highest[T]() - 1
	}
	return 0
}

func highest[T numElem]() T {
	var z T
	var m int64
	switch any(z).(type) {
	case float32, float64:
		return T(math.Inf(1))
	case int8:
		m = math.MaxInt8
	case int16:
		m = math.MaxInt16
	case int32:
		m = math.MaxInt32
	case int64:
		m = math.MaxInt64
	default: // unsigned: all ones
		u := ^uint64(0)
		return T(u)
	}
	return T(m)
}

// maxNaN is the larger of x and y, NaN if either is NaN.
func maxNaN[T numElem](x, y T) T {
	if y > x || y != y {
		return y
	}
	return x
}

// minNaN is the smaller of x and y, NaN if either is NaN.
func minNaN[T numElem](x, y T) T {
	if y < x || y != y {
		return y
	}
	return x
}

// sumFloat64 is the sum of xs in float64, kept as four running sums (the
// additions of one do not wait for the others') added at the end.
func sumFloat64[T float32 | float64](xs []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		s0 += float64(xs[i])
		s1 += float64(xs[i+1])
		s2 += float64(xs[i+2])
		s3 += float64(xs[i+3])
	}
	for ; i < len(xs); i++ {
		s0 += float64(xs[i])
	}
	return s0 + s1 + s2 + s3
}

// convert is Go's conversion, which is Cast's where it is defined: to a
// float (rounded to nearest), or between integers (wrapped).
func convert[D, S numElem](d []D, s []S) {
	d = d[:len(s)]
	for i, v := range s {
		d[i] = D(v)
	}
}

// floatsAs returns v's values as Ts: v itself when T is float64, else
// converted.
func floatsAs[T floatElem](v []float64) []T {
	if s, ok := any(v).([]T); ok {
		return s
	}
	out := make([]T, len(v))
	convert(out, v)
	return out
}

// truncI64 truncates v toward zero; NaN and values out of int64's range
// give the most negative int64 (what x86's cvttsd2si gives, and C code on
// x86 with it), as nd.Convert does.
func truncI64(v float64) int64 {
	if !(v >= -9.223372036854775808e18 && v < 9.223372036854775807e18) {
		return math.MinInt64
	}
	return int64(v)
}

// truncU64 is truncI64 for uint64, as nd.Convert: values in (-2^63, 0)
// wrap, NaN and the rest out of range give 0.
func truncU64(v float64) uint64 {
	switch {
	case v >= 0 && v < 1.8446744073709551615e19:
		return uint64(v)
	case v < 0 && v > -9.223372036854775808e18:
		return uint64(int64(v))
	}
	return 0
}

// Fast float32 functions. Each computes in float32 from a reduction of its
// argument and a polynomial (Taylor's, truncated where its remainder is
// below 1e-8 relative), and falls back to math's float64 function where
// the fast form does not hold (results that underflow to subnormals or
// overflow; NaN).

const (
	log2eF = float32(1.44269504088896340736)
	// ln2Hi + ln2Lo is ln 2; ln2Hi has 15 significant bits, so that n*ln2Hi
	// is exact for the |n| <= 127 of expf's reduction.
	ln2Hi  = float32(0.693145751953125)
	ln2Lo  = float32(1.42860676533018704e-06)
	roundF = float32(12582912) // 1.5 * 2^23: adding it rounds to an integer
)

// expf is e^x in float32, within 2e-7 relative of math.Exp (TestFastMath;
// results below float32's normals within one subnormal step of it).
// x = n ln2 + r with |r| <= ln2/2 (n rounded in float32 by the 1.5*2^23
// trick, r by Cody and Waite's two-part ln 2), e^r by its Taylor
// polynomial of degree 7 (remainder below 6e-9; its Horner steps fused
// multiply-adds, fma32, as the vector kernels' VFMADD213PS: half the
// operations of a product and a sum, and a shorter chain of them, which
// Softmax, Sigmoid, SiLU and Tanh are bound by), times 2^n built in the
// exponent bits: for x < -87, where 2^n is below float32's normals, as
// 2^(n+64) then 2^-64, so that the one rounding to a subnormal is the
// last. Under -105 the result rounds to 0; over 88 (and NaN) math.Exp.
// expF32 (numeric_amd64.s) computes the same bits 8 lanes at a time.
func expf(x float32) float32 {
	if !(x >= -105 && x <= 88) {
		if x < -105 {
			return 0
		}
		return float32(math.Exp(float64(x)))
	}
	t := x*log2eF + roundF
	n := t - roundF
	r := (x - n*ln2Hi) - n*ln2Lo
	p := fma32(r, 1.0/5040, 1.0/720)
	for _, c := range [...]float32{1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1, 1} {
		p = fma32(r, p, c)
	}
	// t's low mantissa bits hold n + 2^22; the exponent field of 2^n is n+127.
	e := math.Float32bits(t) - 0x4b400000
	if x < -87 {
		return p * math.Float32frombits((e+127+64)<<23) * 0x1p-64
	}
	return p * math.Float32frombits((e+127)<<23)
}

// expSubInto writes expf(x[i] - sub) to y[i] (len(y) >= len(x); y may be
// x): whole vectors in expSubF32's kernel where there is one, the rest and
// the vectors it leaves (a value over 88 or NaN) in Go.
func expSubInto(y, x []float32, sub float32) {
	for i := 0; i < len(x); {
		i += expSubF32(y[i:], x[i:], sub)
		for end := min(i+8, len(x)); i < end; i++ {
			y[i] = expf(x[i] - sub)
		}
	}
}

// erfInto writes erff(x[i]) to y[i] (len(y) >= len(x); y may be x): whole
// vectors in erfVecF32's kernel where there is one, the rest in Go.
func erfInto(y, x []float32) {
	for i := erfVecF32(y, x); i < len(x); i++ {
		y[i] = erff(x[i])
	}
}

// erff is erf x in float32, within 1e-6 relative of math.Erf (TestFastMath).
// For |x| < 1, x P(x^2) with P of degree 6; for 1 <= |x| < 4,
// 1 - e^-x^2 R(x - 2.5) with R of degree 10 (erfc x e^x^2 is smooth there);
// beyond, ±1 (erf 4 is 1 - 1.5e-8, which rounds to 1). Both polynomials are
// least-squares fits in float64 on 4,000 Chebyshev nodes of their interval
// (relative weights), rounded to float32. Every step of their Horner
// sums, and of e^-x^2's (expf's), is a fused multiply-add (fma32), as
// the vector kernels compute it (VFMADD213PS): half the operations of a
// product and a sum, and a shorter chain of them, which GELU's run is
// bound by. Within 1.8e-7 relative of math.Erf on TestFastMath's sweep.
func erff(x float32) float32 {
	a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	switch {
	case a < 1:
		t := x * x
		p := fma32(t, 7.9334939e-05, -0.00080348464)
		p = fma32(t, p, 0.0051912186)
		p = fma32(t, p, -0.0268554)
		p = fma32(t, p, 0.11283626)
		p = fma32(t, p, -0.37612629)
		p = fma32(t, p, 1.1283792)
		return x * p
	case a < 4:
		u := a - 2.5
		r := fma32(u, 1.4981339e-06, -6.3341831e-06)
		for _, c := range [...]float32{1.5317162e-05, -5.3845422e-05, 0.00021110837, -0.00073856639, 0.0024674453, -0.0079996092, 0.024937805, -0.074347556, 0.21080637} {
			r = fma32(u, r, c)
		}
		e := 1 - expf(-a*a)*r
		if x < 0 {
			return -e
		}
		return e
	case a == a:
		return math.Float32frombits(math.Float32bits(1) | math.Float32bits(x)&(1<<31))
	}
	return x // NaN
}

// tanhf is tanh x in float32. For |x| < 0.3 its odd Taylor series to x^11
// (remainder below 3e-9 relative); beyond, (1-t)/(1+t) with t = e^-2|x|,
// whose subtraction loses at most a factor 1.25 of expf's precision there.
func tanhf(x float32) float32 {
	a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	if a < 0.3 {
		if a == 0 {
			return x // ±0, its sign kept
		}
		z := x * x
		return x + x*z*(-1.0/3+z*(2.0/15+z*(-17.0/315+z*(62.0/2835+z*(-1382.0/155925)))))
	}
	if a > 10 { // tanh 10 is 1 in float32
		a = 10
	}
	t := expf(-2 * a)
	r := (1 - t) / (1 + t)
	return math.Float32frombits(math.Float32bits(r) | math.Float32bits(x)&(1<<31))
}

// sigmoidf is 1/(1+e^-x) in float32, from t = e^-|x| (at most 1): 1/(1+t)
// for x >= 0 and t/(1+t) below, so that neither overflows nor cancels.
func sigmoidf(x float32) float32 {
	t := expf(-math.Float32frombits(math.Float32bits(x) &^ (1 << 31)))
	if x >= 0 {
		return 1 / (1 + t)
	}
	return t / (1 + t)
}

// sigmoidInto writes sigmoidf(x[i]) to y[i] (len(y) >= len(x); y may be
// x), the same bits: the exponentials of a block at a time in expf's
// vector kernel (expSubInto), then sigmoidf's quotients.
func sigmoidInto(y, x []float32) {
	var buf [256]float32
	for lo := 0; lo < len(x); {
		if n := sigmoidVecF32(y[lo:], x[lo:]); n > 0 { // whole vectors, to the first NaN
			lo += n
			continue
		}
		xs := x[lo:min(len(x), lo+len(buf))]
		t := buf[:len(xs)]
		for i, v := range xs {
			t[i] = math.Float32frombits(math.Float32bits(v) | 1<<31) // -|v|
		}
		expSubInto(t, t, 0)
		ys := y[lo : lo+len(xs)]
		for i, v := range xs {
			// 1/(1+t) for v >= 0, t/(1+t) below, without a branch (the
			// signs of a layer's values are a coin toss to the branch
			// predictor): the numerator chosen by v's sign bit. For -0
			// and NaN the two agree bit for bit (t is 1, or NaN).
			neg := uint32(int32(math.Float32bits(v)) >> 31)
			num := math.Float32frombits(math.Float32bits(1)&^neg | math.Float32bits(t[i])&neg)
			ys[i] = num / (1 + t[i])
		}
		lo += len(xs)
	}
}

// tanhInto writes tanhf(x[i]) to y[i] (len(y) >= len(x); y may be x), the
// same bits: 8 lanes at a time in tanhf's vector kernel where there is
// one; else (and after a NaN) the exponentials of the values beyond
// tanhf's series a block at a time in expf's, the rest as tanhf computes
// it.
func tanhInto(y, x []float32) {
	var buf [256]float32
	for lo := 0; lo < len(x); {
		if n := tanhVecF32(y[lo:], x[lo:]); n > 0 { // whole vectors, to the first NaN
			lo += n
			continue
		}
		xs := x[lo:min(len(x), lo+len(buf))]
		t := buf[:len(xs)]
		for i, v := range xs {
			a := math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
			t[i] = -2 * min(a, 10) // NaN: -2 * 10 (tanhf's series keeps NaN)
		}
		expSubInto(t, t, 0)
		ys := y[lo : lo+len(xs)]
		for i, v := range xs {
			a := math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
			if !(a >= 0.3) {
				ys[i] = tanhf(v)
				continue
			}
			r := (1 - t[i]) / (1 + t[i])
			ys[i] = math.Float32frombits(math.Float32bits(r) | math.Float32bits(v)&(1<<31))
		}
		lo += len(xs)
	}
}

// expm1f is e^x - 1 for x <= 0 in float32 (Elu's negative side): Taylor's
// polynomial of degree 8 above -0.35 (remainder below 3e-10 relative),
// where e^x - 1 would cancel, and expf(x) - 1 below.
func expm1f(x float32) float32 {
	if x > -0.35 {
		return x * (1 + x*(1.0/2+x*(1.0/6+x*(1.0/24+x*(1.0/120+x*(1.0/720+x*(1.0/5040+x*(1.0/40320))))))))
	}
	return expf(x) - 1
}
