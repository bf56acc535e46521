package onnx

import "unsafe"

// Conv (opsets 1, 11) with one input channel per group: depthwise
// convolution (group == channels, MobileNet's 3x3) and depthwise with a
// multiplier (M = k x group), in float32. A matrix product would have K =
// the kernel's 9 taps: too thin for gemm, so a direct kernel.
//
// Each input plane is copied once, padded, into stride x stride phase
// planes (phase (rh, rw) holds the padded input at rows rh, rh+sh, ... and
// columns rw, rw+sw, ...). Every kernel tap then reads one phase plane with
// unit stride, at an offset, and the output rows laid end to end (each
// row as wide as a phase plane, the columns past the output's width
// discarded at the end) are one long sum of taps x shifted planes: a
// vector multiply-add over the whole plane per tap (dwAccumulate,
// AVX-512 or AVX2 assembly where the CPU has it). Planes are spread over
// the cores.

// dwSlack is the floats past a plane that the vector kernel may read or
// write (it works in whole vectors).
const dwSlack = 16

// convDepthwise computes a float32 convolution of one input channel per
// group.
func convDepthwise(p convProblem, x, w, bias, y []float32) {
	g := p.geo
	mg := p.m / p.group
	kvol := g.kSize()
	sh, sw := g.stride[1], g.stride[2]
	oh, ow := g.out[1], g.out[2]
	wq := ow + (g.k[2]-1)*g.dil[2]/sw
	hq := oh + (g.k[1]-1)*g.dil[1]/sh
	phase := hq*wq + wq + dwSlack
	wide := oh * wq
	planeOut, inSize := g.outSize(), g.inSize()
	parallelTasks(p.n*p.group, mg*g.out[0]*wide*kvol, func(t int) {
		buf := getFloats(sh*sw*phase + wide + dwSlack)
		defer putFloats(buf)
		phases, acc := (*buf)[:sh*sw*phase], (*buf)[sh*sw*phase:]
		img, grp := t/p.group, t%p.group
		xc := x[(img*p.c+grp)*inSize:][:inSize]
		srcs := make([]*float32, 0, g.k[1]*g.k[2])
		built := -1
		for j := range mg {
			m := grp*mg + j
			wm := w[m*kvol : (m+1)*kvol]
			yp := y[(img*p.m+m)*planeOut:][:planeOut]
			for od := range g.out[0] {
				var b float32
				if bias != nil {
					b = bias[m]
				}
				a := acc[:wide+dwSlack]
				for i := range a {
					a[i] = b
				}
				for kd := range g.k[0] {
					id := od*g.stride[0] - g.padLo[0] + kd*g.dil[0]
					if id < 0 || id >= g.in[0] {
						continue
					}
					if id != built {
						dwPhases(phases, phase, xc[id*g.in[1]*g.in[2]:], g, hq, wq)
						built = id
					}
					srcs = srcs[:0]
					for kh := range g.k[1] {
						rh, offH := kh*g.dil[1]%sh, kh*g.dil[1]/sh
						for kw := range g.k[2] {
							rw, offW := kw*g.dil[2]%sw, kw*g.dil[2]/sw
							srcs = append(srcs, &phases[(rh*sw+rw)*phase+offH*wq+offW])
						}
					}
					dwAccumulate(a, srcs, wm[kd*g.k[1]*g.k[2]:(kd+1)*g.k[1]*g.k[2]])
				}
				out := yp[od*oh*ow : (od+1)*oh*ow]
				for r := range oh {
					copy(out[r*ow:(r+1)*ow], a[r*wq:])
				}
			}
		}
	})
}

// dwPhases copies the 2-D input plane x (g.in[1] x g.in[2]), padded, into
// the sh x sw phase planes of hq x wq (each phase floats apart, the rest of
// each zeroed).
func dwPhases(dst []float32, phase int, x []float32, g geometry, hq, wq int) {
	sh, sw := g.stride[1], g.stride[2]
	h, w := g.in[1], g.in[2]
	for rh := range sh {
		for rw := range sw {
			pl := dst[(rh*sw+rw)*phase : (rh*sw+rw+1)*phase]
			clear(pl[hq*wq:])
			// Phase columns jj read input column jj*sw+rw-padLo: those in
			// [lo, hi) are inside the input.
			c0 := rw - g.padLo[2]
			lo := 0
			if c0 < 0 {
				lo = min(wq, (-c0+sw-1)/sw)
			}
			hi := lo
			if c0+lo*sw < w {
				hi = min(wq, lo+(w-1-(c0+lo*sw))/sw+1)
			}
			for i := range hq {
				row := pl[i*wq : (i+1)*wq]
				ih := i*sh + rh - g.padLo[1]
				if ih < 0 || ih >= h {
					clear(row)
					continue
				}
				src := x[ih*w : (ih+1)*w]
				clear(row[:lo])
				clear(row[hi:])
				if sw == 1 {
					copy(row[lo:hi], src[c0+lo:])
					continue
				}
				j := c0 + lo*sw
				r := row[lo:hi]
				for k := range r {
					r[k] = src[j]
					j += sw
				}
			}
		}
	}
}

// dwAccumulateGo is dwAccumulate in Go: acc[i] += sum over taps t of
// w[t] * srcs[t][i], for i < len(acc).
func dwAccumulateGo(acc []float32, srcs []*float32, w []float32) {
	n := len(acc)
	for t, p := range srcs {
		src := unsafeFloats(p, n)
		wt := w[t]
		for i := range acc {
			acc[i] += wt * src[i]
		}
	}
}

// unsafeFloats is the n floats from p.
func unsafeFloats(p *float32, n int) []float32 { return unsafe.Slice(p, n) }
