package onnx

import "unsafe"

// Conv (opsets 1, 11) with one input channel per group: depthwise
// convolution (group == channels, MobileNet's 3x3) and depthwise with a
// multiplier (M = k x group), in float32. A matrix product would have K =
// the kernel's 9 taps: too thin for gemm, so a direct kernel.
//
// Each input plane is copied once into a padded buffer whose rows are
// split by column phase (for stride sw, a row holds its columns 0, sw,
// 2sw, ... then 1, 1+sw, ...: even and odd columns for stride 2), so that
// every kernel tap reads unit-stride runs: tap (kh, kw) of output row r,
// column c is the buffer's row r*sh + kh*dh, phase (kw*dw) mod sw, column
// c + (kw*dw)/sw. The output is then computed in stripes of 16 columns,
// four rows at a time, each a sum of taps x shifted runs in AVX-512
// registers, written once with the bias (dwRows; plain Go elsewhere).
// Planes are spread over the cores.

// convDepthwise computes a float32 convolution of one input channel per
// group.
func convDepthwise(p convProblem, x, w, bias, y []float32) {
	g := p.geo
	mg := p.m / p.group
	kvol, k2 := g.kSize(), g.k[1]*g.k[2]
	sh, sw := g.stride[1], g.stride[2]
	oh, ow := g.out[1], g.out[2]
	wq := ow + (g.k[2]-1)*g.dil[2]/sw
	hp := (oh-1)*sh + (g.k[1]-1)*g.dil[1] + 1
	rowLen := sw * wq
	planeOut, inSize := g.outSize(), g.inSize()
	parallelTasks(p.n*p.group, mg*planeOut*kvol, func(t int) {
		buf := getFloats(hp * rowLen)
		defer putFloats(buf)
		padded := *buf
		img, grp := t/p.group, t%p.group
		xc := x[(img*p.c+grp)*inSize:][:inSize]
		srcs := make([]*float32, 0, k2)
		built := -1
		for j := range mg {
			m := grp*mg + j
			var b float32
			if bias != nil {
				b = bias[m]
			}
			yp := y[(img*p.m+m)*planeOut:][:planeOut]
			for od := range g.out[0] {
				out := yp[od*oh*ow : (od+1)*oh*ow]
				first := true
				for kd := range g.k[0] {
					id := od*g.stride[0] - g.padLo[0] + kd*g.dil[0]
					if id < 0 || id >= g.in[0] {
						continue
					}
					if id != built {
						dwPad(padded, xc[id*g.in[1]*g.in[2]:], g, hp, wq)
						built = id
					}
					srcs = srcs[:0]
					for kh := range g.k[1] {
						for kw := range g.k[2] {
							c := kw * g.dil[2]
							srcs = append(srcs, &padded[kh*g.dil[1]*rowLen+c%sw*wq+c/sw])
						}
					}
					wk := w[m*kvol+kd*k2 : m*kvol+(kd+1)*k2]
					if first {
						dwRows(out, ow, oh, ow, srcs, sh*rowLen, wk, b)
						first = false
						continue
					}
					// A later depth tap of a 3-D kernel: add to what the
					// earlier ones wrote.
					dwRowsAdd(out, ow, oh, ow, srcs, sh*rowLen, wk)
				}
				if first { // every depth tap in the padding
					for i := range out {
						out[i] = b
					}
				}
			}
		}
	})
}

// dwRowsAdd is dwRows adding to y instead of starting from a bias.
func dwRowsAdd(y []float32, ldy, rows, cols int, srcs []*float32, ldx int, w []float32) {
	for r := range rows {
		row := y[r*ldy : r*ldy+cols]
		for t, p := range srcs {
			src := unsafeFloats(p, (rows-1)*ldx+cols)[r*ldx:]
			for c := range row {
				row[c] += w[t] * src[c]
			}
		}
	}
}

// dwRowsGo is dwRows in Go.
func dwRowsGo(y []float32, ldy, rows, cols int, srcs []*float32, ldx int, w []float32, bias float32) {
	for r := range rows {
		row := y[r*ldy : r*ldy+cols]
		for c := range row {
			row[c] = bias
		}
	}
	dwRowsAdd(y, ldy, rows, cols, srcs, ldx, w)
}

// dwPad copies the 2-D input plane x (g.in[1] x g.in[2]) into dst, hp
// padded rows of g.stride[2] phases of wq columns each (zeros in the
// padding).
func dwPad(dst []float32, x []float32, g geometry, hp, wq int) {
	sw := g.stride[2]
	h, w := g.in[1], g.in[2]
	pl := g.padLo[2]
	rowLen := sw * wq
	for i := range hp {
		row := dst[i*rowLen : (i+1)*rowLen]
		ih := i - g.padLo[1]
		if ih < 0 || ih >= h {
			clear(row)
			continue
		}
		src := x[ih*w : (ih+1)*w]
		switch sw {
		case 1:
			// Columns [pl, pl+w) of the padded row are the input's, as far
			// as the row goes.
			lo := min(pl, wq)
			n := min(w, wq-lo)
			clear(row[:lo])
			copy(row[lo:lo+n], src)
			clear(row[lo+n:])
		case 2:
			// Input column k is padded column k+pl: phase (k+pl)%2, index
			// (k+pl)/2. Even input columns go to phase pl%2 from pl/2 on,
			// odd ones to phase (pl+1)%2 from (pl+1)/2 on.
			clear(row)
			e, o := row[pl%2*wq:][:wq], row[(pl+1)%2*wq:][:wq]
			e, o = e[min(pl/2, wq):], o[min((pl+1)/2, wq):]
			ne, no := min((w+1)/2, len(e)), min(w/2, len(o))
			pairs := min(ne, no)
			deint2(e, o, src, pairs)
			for i := pairs; i < ne; i++ {
				e[i] = src[2*i]
			}
			for i := pairs; i < no; i++ {
				o[i] = src[2*i+1]
			}
		default:
			for rw := range sw {
				seg := row[rw*wq : (rw+1)*wq]
				for j := range seg {
					c := j*sw + rw - pl
					if c >= 0 && c < w {
						seg[j] = src[c]
					} else {
						seg[j] = 0
					}
				}
			}
		}
	}
}

// unsafeFloats is the n floats from p.
func unsafeFloats(p *float32, n int) []float32 { return unsafe.Slice(p, n) }
