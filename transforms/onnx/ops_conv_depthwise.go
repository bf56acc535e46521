package onnx

import (
	"sync"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
)

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
// c + (kw*dw)/sw. The output is then computed in stripes of 16 (AVX-512)
// or 8 (AVX2) columns, four rows at a time, each a sum of taps x shifted
// runs in vector registers, written once with the bias (dwRows; plain Go
// elsewhere).
// Planes are spread over the cores.

// convDepthwise computes a float32 convolution of one input channel per
// group.
func convDepthwise(p convProblem, x, w, bias, y []float32) {
	g := p.geo
	r := dwRuns.Get().(*dwRun)
	defer dwRuns.Put(r)
	r.wq, r.hp, r.rowLen = dwLayout(g)
	// Planes go to the cores in runs of about parallel.MinWork work each (a
	// task per plane spent more on scheduling and buffers than on the
	// small planes of a network's later layers).
	planes, cost := p.n*p.group, p.m/p.group*g.outSize()*g.kSize()
	r.per = max(1, parallel.MinWork/max(1, cost))
	r.p, r.x, r.w, r.bias, r.y = p, x, w, bias, y
	parallel.EachTasks((planes+r.per-1)/r.per, r.per*cost, r)
	r.p, r.x, r.w, r.bias, r.y = convProblem{}, nil, nil, nil, nil // hold none of the run's
}

// dwRun is one run of convDepthwise, what its tasks share (pooled).
type dwRun struct {
	p                   convProblem
	x, w, bias, y       []float32
	wq, hp, rowLen, per int
}

var dwRuns = sync.Pool{New: func() any { return new(dwRun) }}

// dwSrcs is a task's list of where each tap reads its padded plane
// (pooled).
type dwSrcs struct{ s []*float32 }

var dwSrcsPool = sync.Pool{New: func() any { return new(dwSrcs) }}

// Task computes the planes task*per.. of the run.
func (r *dwRun) Task(task int) {
	p := &r.p
	g := p.geo
	hp, rowLen, wq := r.hp, r.rowLen, r.wq
	buf := getFloats(hp * rowLen)
	defer putFloats(buf)
	padded := (*buf)[:hp*rowLen]
	// Where each tap reads the padded plane: the same for every plane
	// (and depth) of the task, which reuses the buffer.
	ss := dwSrcsPool.Get().(*dwSrcs)
	defer dwSrcsPool.Put(ss)
	srcs := ss.s[:0]
	sw := g.stride[2]
	for kh := range g.k[1] {
		for kw := range g.k[2] {
			c := kw * g.dil[2]
			srcs = append(srcs, &padded[kh*g.dil[1]*rowLen+c%sw*wq+c/sw])
		}
	}
	ss.s = srcs
	b := dwBuf{padded: padded, srcs: srcs, wq: wq, hp: hp, rowLen: rowLen}
	planes := p.n * p.group
	for t := task * r.per; t < min(planes, (task+1)*r.per); t++ {
		depthwisePlane(*p, r.x, r.w, r.bias, r.y, t, b)
	}
	clear(srcs) // hold none of the buffer's
}

// dwLayout is the padded buffer's layout: wq columns per phase, hp rows of
// rowLen (= stride x wq) values.
func dwLayout(g geometry) (wq, hp, rowLen int) {
	sh, sw := g.stride[1], g.stride[2]
	wq = g.out[2] + (g.k[2]-1)*g.dil[2]/sw
	hp = (g.out[1]-1)*sh + (g.k[1]-1)*g.dil[1] + 1
	return wq, hp, sw * wq
}

// dwBuf is a task's padded plane (dwLayout's: hp rows of rowLen, wq
// columns per phase) and where each tap reads it.
type dwBuf struct {
	padded         []float32
	srcs           []*float32
	wq, hp, rowLen int
}

// depthwisePlane computes the outputs of plane t (image t/group, group
// t%group) of convDepthwise in the buffer buf.
func depthwisePlane(p convProblem, x, w, bias, y []float32, t int, buf dwBuf) {
	g := p.geo
	mg := p.m / p.group
	kvol, k2 := g.kSize(), g.k[1]*g.k[2]
	sh := g.stride[1]
	oh, ow := g.out[1], g.out[2]
	padded, srcs, wq, hp, rowLen := buf.padded, buf.srcs, buf.wq, buf.hp, buf.rowLen
	planeOut, inSize := g.outSize(), g.inSize()
	clear(padded) // the padding; dwPad writes the rest
	img, grp := t/p.group, t%p.group
	xc := x[(img*p.c+grp)*inSize:][:inSize]
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
		p.finish(y, (img*p.m+m)*planeOut, 1, planeOut, planeOut)
	}
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

// deint2Go is deint2 in Go.
func deint2Go(even, odd, src []float32, rows, n, ldd, lds int) {
	for r := range rows {
		e, o, s := even[r*ldd:r*ldd+n], odd[r*ldd:r*ldd+n], src[r*lds:r*lds+2*n]
		for i := range e {
			e[i], o[i] = s[2*i], s[2*i+1]
		}
	}
}

// unsafeFloats is the n floats from p.
func unsafeFloats(p *float32, n int) []float32 { return unsafe.Slice(p, n) }
