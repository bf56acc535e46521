// expf's vector body at 16 lanes, for the AVX-512 kernels of this package
// that compute exponentials (numeric_avx512_amd64.s, ops_softmax_avx512_amd64.s):
// expf_amd64.h's EXPF with masks in place of blends, the same float32
// operations in the same order, so each lane's bits are expf's.

// Rows of tanhTab16 (numeric_amd64.go): tanhTab's, 16 copies each (64 bytes),
// expf's first.
#define Z_LOG2E 0(R8)
#define Z_ROUND 64(R8)
#define Z_LN2HI 128(R8)
#define Z_LN2LO 192(R8)
#define Z_C5040 256(R8)
#define Z_C720 320(R8)
#define Z_C120 384(R8)
#define Z_C24 448(R8)
#define Z_C6 512(R8)
#define Z_C2 576(R8)
#define Z_ONE 640(R8)
#define Z_HI 704(R8)
#define Z_LOWNORM 768(R8)
#define Z_ZEROBELOW 832(R8)
#define Z_TWOM64 896(R8)
#define Z_BIAS 960(R8)
#define Z_BIASLOW 1024(R8)

// EXP512(x, e, r, n, p, t, s, k1, k2) computes expf of x (<= 88, not NaN)
// into p, 16 lanes, as numeric_amd64.s's EXPF: e, r, n, t, s scratch.
#define EXP512(x, e, r, n, p, t, s, k1, k2) \
	VMULPS Z_LOG2E, x, e \
	VADDPS Z_ROUND, e, e \
	VSUBPS Z_ROUND, e, n \
	VMULPS Z_LN2HI, n, r \
	VSUBPS r, x, r \
	VMULPS Z_LN2LO, n, p \
	VSUBPS p, r, r \
	VMOVUPS Z_C5040, p \
	VFMADD213PS Z_C720, r, p \
	VFMADD213PS Z_C120, r, p \
	VFMADD213PS Z_C24, r, p \
	VFMADD213PS Z_C6, r, p \
	VFMADD213PS Z_C2, r, p \
	VFMADD213PS Z_ONE, r, p \
	VFMADD213PS Z_ONE, r, p \
	VCMPPS $1, Z_LOWNORM, x, k1 \
	VMOVUPS Z_BIAS, t \
	VMOVUPS Z_BIASLOW, k1, t \
	VPSUBD t, e, t \
	VPSLLD $23, t, t \
	VMULPS t, p, p \
	VMOVUPS Z_ONE, s \
	VMOVUPS Z_TWOM64, k1, s \
	VMULPS s, p, p \
	VCMPPS $1, Z_ZEROBELOW, x, k2 \
	KNOTW k2, k2 \
	VMOVAPS.Z p, k2, p
