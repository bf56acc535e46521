package onnx

// The integer products where the constant operand's values are small
// enough for VPMADDUBSW: a faster kernel than igemm's, exact where it is
// used.
//
// VPMADDUBSW multiplies 32 uint8s by 32 int8s and adds each pair's two
// products into an int16, with saturation; VPMADDWD by ones then adds the
// pairs of a quad into int32s: 32 multiplications in two instructions where
// igemm's VPMADDWD does 16 in one, and the operands are bytes. A pair's
// sum u1 x s1 + u2 x s2 stays within int16 (no saturation: exact) when
// |s1| + |s2| <= 128, as 255 x 128 < 2^15. The constant operand (a Conv's
// W, a MatMul's B) holds the int8s, less its zero points (each within
// int8), and is checked when it is packed: every pair of K (4q, 4q+1 and
// 4q+2, 4q+3) of every row or column within 128. ONNX Runtime's quantizer
// writes such weights (reduce_range: 7 bits, in [-64, 63]); 8-bit weights
// fail the check and take igemm. The other operand keeps its raw uint8
// values (int8 ones flipped to uint8 by adding 128 to values and zero
// point), and its zero point z comes out of the sums afterwards:
// sum (x - z) w' = sum x w' - z sum w' (ONNX Runtime's correction by the
// weights' sums), the convolution's padding being z itself.
//
// Where the CPU has AVX-512 VNNI, VPDPBUSD does a quad's four
// multiplications and their sum into an int32 in one instruction (no int16
// step), 64 a Z register: ubgemmVNNI on a tile, ubgemm8x32VNNI on four
// at once, on the same panels.
//
// The panels are igemm's with quads of K in place of pairs: A in panels of
// ubRows rows, per quad each row's four values; B in panels of ubCols
// columns, per quad each column's four; K completed with 0 in the constant
// operand.

const (
	ubRows = 4   // rows of A's panels, and of a tile
	ubCols = 16  // columns of B's panels, and of a tile
	ubKC   = 256 // quads of K per block (B's panel block: 16 KiB)
)

// ubQuadsOf is the quads of K = k.
func ubQuadsOf(k int) int { return (k + 3) / 4 }

// ubASize and ubBSize are the bytes of m rows' (n columns') panels of k.
func ubASize(m, k int) int { return (m + ubRows - 1) / ubRows * ubRows * 4 * ubQuadsOf(k) }
func ubBSize(k, n int) int { return (n + ubCols - 1) / ubCols * ubCols * 4 * ubQuadsOf(k) }

// ubFits reports whether the values v (k of them, at v(0) .. v(k-1), less
// their zero point) can be VPMADDUBSW's int8s: each in int8, each pair
// (2i, 2i+1) within 128 in magnitude.
func ubFits(k int, v func(p int) int32) bool {
	for p := 0; p < k; p += 2 {
		a := v(p)
		var b int32
		if p+1 < k {
			b = v(p + 1)
		}
		if a < -128 || a > 127 || b < -128 || b > 127 || max(a, -a)+max(b, -b) > 128 {
			return false
		}
	}
	return true
}

// ubPackA packs m rows of k values (row i's value p at v(i, p)) into dst
// (ubASize(m, k)) as bytes: panels of ubRows rows, per quad each row's
// four values; rows past m and values past k are 0.
func ubPackA(dst []byte, m, k int, v func(i, p int) byte) {
	kq := ubQuadsOf(k)
	for ip := 0; ip < m; ip += ubRows {
		panel := dst[ip*4*kq:][:ubRows*4*kq]
		for q := range kq {
			for r := range ubRows {
				for e := range 4 {
					var b byte
					if i, p := ip+r, 4*q+e; i < m && p < k {
						b = v(i, p)
					}
					panel[q*4*ubRows+4*r+e] = b
				}
			}
		}
	}
}

// ubPackARows packs m rows of x (uint8s or int8s as bytes, row stride lda,
// k values each) as ubPackA, flip adding 128 (int8 to uint8), the rows'
// fourth values at a time.
func ubPackARows(dst, x []byte, lda, m, k int, flip bool) {
	kq, full := ubQuadsOf(k), k/4
	var f byte
	if flip {
		f = 0x80
	}
	for ip := 0; ip < m; ip += ubRows {
		panel := dst[ip*4*kq:][:ubRows*4*kq]
		for r := range ubRows {
			i := ip + r
			if i >= m {
				for q := range kq {
					clear(panel[q*4*ubRows+4*r : q*4*ubRows+4*r+4])
				}
				continue
			}
			row := x[i*lda : i*lda+k]
			for q := range full {
				d := panel[q*4*ubRows+4*r : q*4*ubRows+4*r+4]
				s := row[4*q : 4*q+4]
				d[0], d[1], d[2], d[3] = s[0]^f, s[1]^f, s[2]^f, s[3]^f
			}
			if full < kq {
				d := panel[full*4*ubRows+4*r : full*4*ubRows+4*r+4]
				for e := range 4 {
					d[e] = 0
					if p := 4*full + e; p < k {
						d[e] = row[p] ^ f
					}
				}
			}
		}
	}
}

// ubPackB packs the k x n matrix (value p of column j at v(p, j)) into dst
// (ubBSize(k, n)): panels of ubCols columns, per quad each column's four;
// columns past n and values past k are 0.
func ubPackB(dst []byte, k, n int, v func(p, j int) byte) {
	kq := ubQuadsOf(k)
	for jp := 0; jp < n; jp += ubCols {
		panel := dst[jp*4*kq:][:ubCols*4*kq]
		for q := range kq {
			for c := range ubCols {
				for e := range 4 {
					var b byte
					if j, p := jp+c, 4*q+e; j < n && p < k {
						b = v(p, j)
					}
					panel[q*4*ubCols+4*c+e] = b
				}
			}
		}
	}
}

// ubPackBAt packs the k x n matrix of bytes whose row r is x[offs[r]:][:n]
// as ubPackB, whole panels by ubQuads; rows past k read row 0 (the other
// operand's values there are 0).
func ubPackBAt(dst, x []byte, offs []int, k, n int) {
	kq := ubQuadsOf(k)
	stride := kq * 4 * ubCols
	full, panels := n/ubCols, (n+ubCols-1)/ubCols
	row := func(r int) []byte {
		if r >= k {
			r = 0
		}
		return x[offs[r] : offs[r]+n]
	}
	for q := range kq {
		r0, r1, r2, r3 := row(4*q), row(4*q+1), row(4*q+2), row(4*q+3)
		d := dst[q*4*ubCols:]
		ubQuads(d, r0, r1, r2, r3, full, stride)
		for jp := full; jp < panels; jp++ {
			pd := d[jp*stride : jp*stride+4*ubCols]
			clear(pd)
			for c := range min(ubCols, n-jp*ubCols) {
				j := jp*ubCols + c
				pd[4*c], pd[4*c+1], pd[4*c+2], pd[4*c+3] = r0[j], r1[j], r2[j], r3[j]
			}
		}
	}
}

// ubgemm computes the int32 sums C (m x n, row stride ldc) = init + A x B
// from a, m rows packed by ubPackA or ubPackARows, and b, n columns packed
// by ubPackB or ubPackBAt, both over kq quads of K: init (nil: 0) has a
// value per column (at least n rounded up to ubCols), added to every row.
// aSigned: A holds the int8s, B the uint8s; else the other way round.
func ubgemm(a []byte, m int, b []byte, n, kq int, c []int32, ldc int, init []int32, aSigned bool) {
	if m == 0 || n == 0 {
		return
	}
	var zeros [2 * ubCols]int32
	var tile [ubRows * ubCols]int32
	// With VNNI the rows and columns of whole 8 x 32 blocks go through
	// ubgemmTile2 (four tiles a pass), the rest tile by tile.
	m8, n32 := 0, 0
	if ubVNNI {
		m8, n32 = m&^(2*ubRows-1), n&^(2*ubCols-1)
	}
	if kq == 0 {
		for i := range m {
			for j := range n {
				c[i*ldc+j] = 0
				if init != nil {
					c[i*ldc+j] = init[j]
				}
			}
		}
		return
	}
	for k0 := 0; k0 < kq; k0 += ubKC {
		kc, acc := min(ubKC, kq-k0), k0 > 0
		for jp := 0; jp < n32; jp += 2 * ubCols {
			in := zeros[:]
			if init != nil {
				in = init[jp : jp+2*ubCols]
			}
			for ip := 0; ip < m8; ip += 2 * ubRows {
				ubgemmTile2(a[ip*4*kq+k0*4*ubRows:], b[jp*4*kq+k0*4*ubCols:], c[ip*ldc+jp:], kc, ldc, in, acc, aSigned, ubRows*4*kq, ubCols*4*kq)
			}
		}
		for jp := 0; jp < n; jp += ubCols {
			bp := b[jp*4*kq+k0*4*ubCols:]
			cols := min(ubCols, n-jp)
			in := zeros[:ubCols]
			if init != nil {
				in = init[jp : jp+ubCols]
			}
			ip0 := 0
			if jp < n32 {
				ip0 = m8 // done above
			}
			for ip := ip0; ip < m; ip += ubRows {
				ap := a[ip*4*kq+k0*4*ubRows:]
				rows := min(ubRows, m-ip)
				if rows == ubRows && cols == ubCols {
					ubgemmTile(ap, bp, c[ip*ldc+jp:], kc, ldc, in, acc, aSigned)
					continue
				}
				if acc {
					for r := range rows {
						copy(tile[r*ubCols:r*ubCols+cols], c[(ip+r)*ldc+jp:])
					}
				}
				ubgemmTile(ap, bp, tile[:], kc, ubCols, in, acc, aSigned)
				for r := range rows {
					copy(c[(ip+r)*ldc+jp:(ip+r)*ldc+jp+cols], tile[r*ubCols:])
				}
			}
		}
	}
}

// ubgemmTileGo is ubgemmTile's plain Go loop (exact sums: the kernel's
// wherever its pairs do not saturate, which ubFits makes sure of).
func ubgemmTileGo(a, b []byte, c []int32, kq, ldc int, init []int32, acc, aSigned bool) {
	var s [ubRows][ubCols]int32
	if !acc {
		for r := range s {
			copy(s[r][:], init)
		}
	}
	av, bv := func(x byte) int32 { return int32(x) }, func(x byte) int32 { return int32(int8(x)) }
	if aSigned {
		av, bv = bv, av
	}
	for q := range kq {
		ap, bp := a[q*4*ubRows:q*4*ubRows+4*ubRows], b[q*4*ubCols:q*4*ubCols+4*ubCols]
		for r := range ubRows {
			for j := range ubCols {
				var sum int32
				for e := range 4 {
					sum += av(ap[4*r+e]) * bv(bp[4*j+e])
				}
				s[r][j] += sum
			}
		}
	}
	for r := range ubRows {
		row := c[r*ldc : r*ldc+ubCols]
		for j := range row {
			if acc {
				row[j] += s[r][j]
			} else {
				row[j] = s[r][j]
			}
		}
	}
}

// ubQuadsGo is ubQuads's plain Go loop.
func ubQuadsGo(dst, r0, r1, r2, r3 []byte, panels, stride int) {
	for jp := range panels {
		d := dst[jp*stride : jp*stride+4*ubCols]
		for c := range ubCols {
			j := jp*ubCols + c
			d[4*c], d[4*c+1], d[4*c+2], d[4*c+3] = r0[j], r1[j], r2[j], r3[j]
		}
	}
}
