package nd

import "math"

// Half is an IEEE 754 half-precision float (ONNX FLOAT16), as stored.
type Half uint16

// BHalf is a bfloat16 (ONNX BFLOAT16): the top 16 bits of a float32.
type BHalf uint16

// Float32 widens h exactly.
func (h Half) Float32() float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: renormalise
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// HalfOf rounds f to the nearest half (ties to even), as NumPy's astype
// does: overflow gives infinity, NaN stays NaN.
func HalfOf(f float32) Half {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return Half(sign | 0x7e00 | uint16(man>>13)) // NaN, quiet
		}
		return Half(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return Half(sign | 0x7c00)
	}
	if e <= 0 {
		if e < -10 {
			return Half(sign) // underflows to zero (even 0.5 ulp rounds to 0)
		}
		m := man | 0x800000 // implicit bit
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		r := m >> shift
		rem := m & (1<<shift - 1)
		if rem > half || rem == half && r&1 == 1 {
			r++
		}
		return Half(sign | uint16(r))
	}
	r := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && r&1 == 1 {
		r++ // may carry into the exponent, up to infinity: correct
	}
	return Half(sign | uint16(r))
}

// Float32 widens h exactly.
func (h BHalf) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// BHalfOf rounds f to the nearest bfloat16 (ties to even); NaN stays NaN.
func BHalfOf(f float32) BHalf {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return BHalf(b>>16 | 0x40)
	}
	return BHalf((b + 0x7fff + (b>>16)&1) >> 16)
}

// Float64 widens f as float64.
func (h Half) Float64() float64 { return float64(h.Float32()) }

// HalfOf64 rounds f to the nearest half directly (not through float32, so
// that it rounds once).
func HalfOf64(f float64) Half {
	if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
		return HalfOf(float32(f))
	}
	h := HalfOf(float32(f))
	// float32(f) rounded once already; correct a double rounding: pick the
	// nearer of h and its neighbour toward f.
	hf := float64(h.Float32())
	if hf == f || math.IsInf(hf, 0) {
		return h
	}
	var other Half
	if (hf < f) == (f > 0) {
		other = h + 1
	} else {
		other = h - 1
	}
	of := float64(other.Float32())
	if math.IsInf(of, 0) || math.IsNaN(of) {
		return h
	}
	dh, do := math.Abs(hf-f), math.Abs(of-f)
	if do < dh || do == dh && other&1 == 0 {
		return other
	}
	return h
}
