// expf's vector body, for the AVX2 kernels of this package that compute
// exponentials (numeric_amd64.s, ops_rnn_amd64.s): the same float32
// operations in the same order as expf (numeric.go), its polynomial's
// Horner steps fused multiply-adds as expf's fma32, so each lane's bits
// are expf's.

// Rows of expTab (numeric_amd64.go), 8 copies of a constant each: 32 bytes.
#define LOG2E 0(R8)
#define ROUND 32(R8)
#define LN2HI 64(R8)
#define LN2LO 96(R8)
#define C5040 128(R8)
#define C720 160(R8)
#define C120 192(R8)
#define C24 224(R8)
#define C6 256(R8)
#define C2 288(R8)
#define ONE 320(R8)
#define HI 352(R8)
#define LOWNORM 384(R8)
#define ZEROBELOW 416(R8)
#define TWOM64 448(R8)
#define BIAS 480(R8)
#define BIASLOW 512(R8)

// EXPF computes expf(x) of Y0 into Y4, 8 lanes, for x <= 88 and not NaN
// (the callers check), as expf does: n = round(x log2e), r = (x - n
// ln2Hi) - n ln2Lo, p = Taylor's polynomial of degree 7 in r, times 2^n
// (for x < -87 2^(n+64) then 2^-64), 0 below -105. Clobbers Y1 to Y7;
// R8 holds the table.
#define EXPF \
	VMULPS    LOG2E, Y0, Y1 \
	VADDPS    ROUND, Y1, Y1 \
	VSUBPS    ROUND, Y1, Y2 \
	VMULPS    LN2HI, Y2, Y3 \
	VSUBPS    Y3, Y0, Y3 \
	VMULPS    LN2LO, Y2, Y4 \
	VSUBPS    Y4, Y3, Y3 \
	VMOVUPS C5040, Y4 \
	VFMADD213PS C720, Y3, Y4 \
	VFMADD213PS C120, Y3, Y4 \
	VFMADD213PS C24, Y3, Y4 \
	VFMADD213PS C6, Y3, Y4 \
	VFMADD213PS C2, Y3, Y4 \
	VFMADD213PS ONE, Y3, Y4 \
	VFMADD213PS ONE, Y3, Y4 \
	VCMPPS    $1, LOWNORM, Y0, Y5 \
	VMOVUPS   BIAS, Y6 \
	VBLENDVPS Y5, BIASLOW, Y6, Y6 \
	VPSUBD    Y6, Y1, Y6 \
	VPSLLD    $23, Y6, Y6 \
	VMULPS    Y6, Y4, Y4 \
	VMOVUPS   ONE, Y7 \
	VBLENDVPS Y5, TWOM64, Y7, Y7 \
	VMULPS    Y7, Y4, Y4 \
	VCMPPS    $1, ZEROBELOW, Y0, Y5 \
	VANDNPS   Y4, Y5, Y4
