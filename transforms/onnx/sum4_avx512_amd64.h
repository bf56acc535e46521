// sum4's float64 sum (ops_instnorm.go) for the AVX-512 row kernels
// (ops_softmax_avx512_amd64.s, ops_norm_avx512_amd64.s): eight running
// sums over a row's whole 8-vectors (lane j: the values at 8q+j), added as
// sumAVX2 adds its own, then the last n%8 values as sum4's Go loop adds
// them, so that a row's sum has sum4's bits; and their rows' shape.

// ROWSHAPE(n) sets, for rows of n floats (a register other than CX), R9 to
// a row's bytes, R10 to its whole 16-vectors, R11 to its last n%16 values
// and K7 to their lanes. Clobbers AX and R13 (CX kept).
#define ROWSHAPE(n) \
	MOVQ  n, R9 \
	SHLQ  $2, R9 \
	MOVQ  n, R10 \
	SHRQ  $4, R10 \
	MOVQ  n, R11 \
	ANDQ  $15, R11 \
	MOVQ  CX, R13 \
	MOVQ  R11, CX \
	MOVL  $1, AX \
	SHLL  CX, AX \
	DECL  AX \
	KMOVW AX, K7 \
	MOVQ  R13, CX

// REDUCE8(acc) leaves in X0 the eight sums of acc added as sumAVX2 adds
// them: lanes j and j+4, then the 128-bit halves, then the two values.
// Clobbers Z0 and X1.
#define REDUCE8(acc) \
	VMOVAPD       acc, Z0 \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPD        Y1, Y0, Y0 \
	VEXTRACTF128  $1, Y0, X1 \
	VADDPD        X1, X0, X0 \
	VPERMILPD     $1, X0, X1 \
	VADDSD        X1, X0, X0

// SUM4TAIL(loop, done) adds to X0 (REDUCE8's sum) the AX < 8 floats at
// R12 as sum4's Go loop does: four at a time into s0 (X0) to s3 (X1 to
// X3), the rest into s0, then (s0 + s1) + (s2 + s3) in X0. loop and done
// are the macro's labels, one pair a use. Clobbers X1 to X4, AX and R12.
#define SUM4TAIL(loop, done) \
	VXORPD    X1, X1, X1 \
	VXORPD    X2, X2, X2 \
	VXORPD    X3, X3, X3 \
	CMPQ      AX, $4 \
	JLT       loop \
	VCVTSS2SD (R12), X4, X4 \
	VADDSD    X4, X0, X0 \
	VCVTSS2SD 4(R12), X4, X4 \
	VADDSD    X4, X1, X1 \
	VCVTSS2SD 8(R12), X4, X4 \
	VADDSD    X4, X2, X2 \
	VCVTSS2SD 12(R12), X4, X4 \
	VADDSD    X4, X3, X3 \
	ADDQ      $16, R12 \
	SUBQ      $4, AX \
loop: \
	TESTQ     AX, AX \
	JZ        done \
	VCVTSS2SD (R12), X4, X4 \
	VADDSD    X4, X0, X0 \
	ADDQ      $4, R12 \
	DECQ      AX \
	JMP       loop \
done: \
	VADDSD    X1, X0, X0 \
	VADDSD    X3, X2, X2 \
	VADDSD    X2, X0, X0
