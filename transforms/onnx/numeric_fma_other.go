//go:build !arm64

package onnx

import "math"

// fma32 is a*b + c rounded once to float32 (to nearest, ties to even), as
// the FMA instructions compute it (arm64 has it in one instruction:
// numeric_fma_arm64.go), for finite a, b, c whose result is finite. a*b
// is exact in float64 (48 bits); their sum is that rounded (s) plus an
// exact error (e, TwoSum), and s rounded to float32 is a*b + c rounded,
// but where a float32 midpoint lies between s and s + e, or is s + e:
// there e decides.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb)
	r := float32(s)
	if e == 0 {
		return r
	}
	// The float32 past r on e's side and the midpoint between them
	// (exact in float64); m - s is exact (Sterbenz).
	o := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), e)))
	m := (float64(r) + float64(o)) / 2
	d := m - s
	switch {
	case d == e: // a*b + c is the midpoint: the even one
		if math.Float32bits(r)&1 == 0 {
			return r
		}
		return o
	case d == 0 || (d > 0) == (e > 0) && math.Abs(d) < math.Abs(e): // past the midpoint
		return o
	}
	return r
}
