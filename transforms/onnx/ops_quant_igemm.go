package onnx

import "sync"

// The integer products of the quantized operators where the CPU has AVX2:
// exact int32 sums of int16 products, 16 multiplications a VPMADDWD.
//
// An operand less its zero point (|x - z| <= 255, int8 or uint8) is an
// int16; VPMADDWD multiplies 16 pairs of int16s and adds each pair's two
// products into an int32, exactly (|sum| <= 2 x 255 x 255), where an FMA
// multiplies 8 float32s. The sums add in int32, exactly while they stay in
// its range, which 8-bit data reaches only past K = 2^31 / 255^2 (33025):
// beyond it they wrap, as in ONNX Runtime. (VPMADDUBSW, which ONNX
// Runtime's uint8 x int8 kernels use on AVX2 without VNNI, adds a pair's
// products in int16 with saturation: not exact for 8-bit weights.)
//
// igemm computes C (m x n) = A (m x k) x B (k x n) from panels: A in
// panels of igRows rows, per pair of K each row's two values (igPackA); B
// in panels of igCols columns, per pair of K each column's two values
// (igPackB), an odd K's last pair completed with 0. The constant operand
// (a MatMul's B, a Conv's W) is packed once; the other per task. A tile of
// 6 x 16 sums lives in 12 registers over a block of igKC pairs (B's panel
// block, up to 32 KiB, in L1 or L2 while every panel of A passes it).

const (
	igRows = 6   // rows of A's panels, and of a tile
	igCols = 16  // columns of B's panels, and of a tile
	igKC   = 512 // pairs of K per block (1024: most layers' K whole)
)

// igPairsOf is the pairs of K = k.
func igPairsOf(k int) int { return (k + 1) / 2 }

// igASize and igBSize are the int16s of m rows' (n columns') panels of k.
func igASize(m, k int) int { return (m + igRows - 1) / igRows * igRows * 2 * igPairsOf(k) }
func igBSize(k, n int) int { return (n + igCols - 1) / igCols * igCols * 2 * igPairsOf(k) }

// zpAt is zero point i of zp: one per index (len > 1), one in all, or
// none (nil: 0).
func zpAt(zp []int32, i int) int32 {
	switch len(zp) {
	case 0:
		return 0
	case 1:
		return zp[0]
	}
	return zp[i]
}

// igPackA packs m rows of x (k values each, row stride lda), row i less
// zpAt(zp, i), into dst (igASize(m, k)): panels of igRows rows (the last
// completed with 0), per pair of K each row's two values.
func igPackA[X int8 | uint8](dst []int16, x []X, lda, m, k int, zp []int32) {
	kp := igPairsOf(k)
	for ip := 0; ip < m; ip += igRows {
		panel := dst[ip/igRows*kp*2*igRows:][:kp*2*igRows]
		for r := range igRows {
			i := ip + r
			if i >= m {
				for p := range kp {
					panel[p*2*igRows+2*r], panel[p*2*igRows+2*r+1] = 0, 0
				}
				continue
			}
			z := zpAt(zp, i)
			row := x[i*lda : i*lda+k]
			d := panel[2*r:]
			for p := range k / 2 {
				d[p*2*igRows] = int16(int32(row[2*p]) - z)
				d[p*2*igRows+1] = int16(int32(row[2*p+1]) - z)
			}
			if k%2 == 1 {
				d[(kp-1)*2*igRows] = int16(int32(row[k-1]) - z)
				d[(kp-1)*2*igRows+1] = 0
			}
		}
	}
}

// igPackB packs the k x n int16 matrix b (row stride ldb) into dst
// (igBSize(k, n)): panels of igCols columns (the last completed with 0),
// per pair of K each column's two values.
func igPackB(dst, b []int16, ldb, k, n int) {
	igPackBRows(dst, k, n, func(r int) []int16 { return b[r*ldb : r*ldb+n] })
}

// igPackBAt is igPackB of the k x n matrix whose row r is x[offs[r]:][:n].
func igPackBAt(dst, x []int16, offs []int, k, n int) {
	igPackBRows(dst, k, n, func(r int) []int16 { return x[offs[r] : offs[r]+n] })
}

// igPackBRows is igPackB of the k x n matrix whose row r is row(r).
func igPackBRows(dst []int16, k, n int, row func(r int) []int16) {
	kp := igPairsOf(k)
	stride := kp * 2 * igCols // between panels
	full, panels := n/igCols, (n+igCols-1)/igCols
	for p := range kp {
		r0 := row(2 * p)
		var r1 []int16
		if 2*p+1 < k {
			r1 = row(2*p + 1)
		}
		d := dst[p*2*igCols:]
		if r1 != nil {
			igPairs(d, r0, r1, full, stride)
		}
		// The rest value by value: an odd K's last pair, a last panel
		// of fewer than igCols columns.
		first := 0
		if r1 != nil {
			first = full
		}
		for jp := first; jp < panels; jp++ {
			pd := d[jp*stride : jp*stride+2*igCols]
			for c := range igCols {
				j := jp*igCols + c
				var v0, v1 int16
				if j < n {
					v0 = r0[j]
					if r1 != nil {
						v1 = r1[j]
					}
				}
				pd[2*c], pd[2*c+1] = v0, v1
			}
		}
	}
}

// igemm computes the int32 sums C (m x n, row stride ldc) = A x B from a,
// m rows packed by igPackA, and b, n columns packed by igPackB, both over
// kp pairs of K.
func igemm(a []int16, m int, b []int16, n, kp int, c []int32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if kp == 0 {
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
		return
	}
	var tile [igRows * igCols]int32
	for k0 := 0; k0 < kp; k0 += igKC {
		kc, acc := min(igKC, kp-k0), k0 > 0
		for jp := 0; jp < n; jp += igCols {
			bp := b[jp*2*kp+k0*2*igCols:]
			cols := min(igCols, n-jp)
			for ip := 0; ip < m; ip += igRows {
				ap := a[ip*2*kp+k0*2*igRows:]
				rows := min(igRows, m-ip)
				if rows == igRows && cols == igCols {
					igemmTile(ap, bp, c[ip*ldc+jp:], kc, ldc, acc)
					continue
				}
				// An edge tile: through tile.
				if acc {
					for r := range rows {
						copy(tile[r*igCols:r*igCols+cols], c[(ip+r)*ldc+jp:])
					}
				}
				igemmTile(ap, bp, tile[:], kc, igCols, acc)
				for r := range rows {
					copy(c[(ip+r)*ldc+jp:(ip+r)*ldc+jp+cols], tile[r*igCols:])
				}
			}
		}
	}
}

// igemmTileGo is igemmTile's plain Go loop.
func igemmTileGo(a, b []int16, c []int32, kp, ldc int, acc bool) {
	var s [igRows][igCols]int32
	for p := range kp {
		ap, bp := a[p*2*igRows:p*2*igRows+2*igRows], b[p*2*igCols:p*2*igCols+2*igCols]
		for r := range igRows {
			a0, a1 := int32(ap[2*r]), int32(ap[2*r+1])
			for j := range igCols {
				s[r][j] += a0*int32(bp[2*j]) + a1*int32(bp[2*j+1])
			}
		}
	}
	for r := range igRows {
		row := c[r*ldc : r*ldc+igCols]
		for j := range row {
			if acc {
				row[j] += s[r][j]
			} else {
				row[j] = s[r][j]
			}
		}
	}
}

// igPairsGo is igPairs's plain Go loop.
func igPairsGo(dst, r0, r1 []int16, panels, stride int) {
	for jp := range panels {
		d := dst[jp*stride : jp*stride+2*igCols]
		for c := range igCols {
			d[2*c], d[2*c+1] = r0[jp*igCols+c], r1[jp*igCols+c]
		}
	}
}

// shiftInt16 writes x less its zero point as int16s into dst, x's values in
// outer x n x inner order with zp one per index of the middle axis (or one
// in all, or none).
func shiftInt16[X int8 | uint8](dst []int16, x []X, zp []int32, outer, n, inner int) {
	if len(zp) <= 1 {
		z := zpAt(zp, 0)
		for i, v := range x[:len(dst)] {
			dst[i] = int16(int32(v) - z)
		}
		return
	}
	i := 0
	for range outer {
		for c := range n {
			z := zp[c]
			for j := range inner {
				dst[i+j] = int16(int32(x[i+j]) - z)
			}
			i += inner
		}
	}
}

// scratch is a pool of scratch buffers of Ts. The integer kernels keep
// their packed panels and their padded inputs in pools of their own: a
// buffer taken for the one is often too small for the other, and would be
// dropped and made anew on every run.
type scratch[T any] struct{ p sync.Pool }

// get returns a buffer of n Ts (contents undefined); put gives it back.
func (s *scratch[T]) get(n int) *[]T {
	if b, ok := s.p.Get().(*[]T); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]T, n)
	return &b
}

func (s *scratch[T]) put(b *[]T) { s.p.Put(b) }

var (
	panels16, planes16 scratch[int16] // igemm's packed panels, its padded inputs
	panels8, planes8   scratch[byte]  // ubgemm's
	requantRows8       scratch[byte]  // a quantized convolution's rows of outputs (requantRuns)
)

// fill sets every value of s to v, by doubling copies.
func fill[T any](s []T, v T) {
	if len(s) == 0 {
		return
	}
	s[0] = v
	for n := 1; n < len(s); n *= 2 {
		copy(s[n:], s[:n])
	}
}
