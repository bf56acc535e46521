package gemm

// kernelGo is the portable 4x4 micro-kernel: sixteen scalar accumulators,
// each summed in increasing k order. The compiler may fuse a multiply-add
// into one FMA where the architecture has one (arm64 does, amd64 does not),
// so its bits can differ between architectures, never between runs.
func kernelGo(kc int, a, b, c []float32, ldc int, alpha, beta float32, flags int) {
	a, b = a[:4*kc], b[:4*kc]
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	for p := 0; p+3 < len(a) && p+3 < len(b); p += 4 {
		a0, a1, a2, a3 := a[p], a[p+1], a[p+2], a[p+3]
		b0, b1, b2, b3 := b[p], b[p+1], b[p+2], b[p+3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	update(c[0:4], []float32{c00, c01, c02, c03}, alpha, beta, flags)
	update(c[ldc:ldc+4], []float32{c10, c11, c12, c13}, alpha, beta, flags)
	update(c[2*ldc:2*ldc+4], []float32{c20, c21, c22, c23}, alpha, beta, flags)
	update(c[3*ldc:3*ldc+4], []float32{c30, c31, c32, c33}, alpha, beta, flags)
}
