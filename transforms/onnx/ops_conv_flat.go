package onnx

import (
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
)

// Conv with stride 1 or 2 by shifted sums over a padded, flattened image
// (a direct convolution: no patches matrix).
//
// Each image's channels are copied once into planes padded on every side
// (Hp x Wp, Hp = output rows + kernel extent - 1, Wp likewise; with stride
// 2, cut into its phases: flatLayout). Flattened,
// the output at q = oh*Wp + ow is then sum over channels c and taps (kh,
// kw) of w[c,kh,kw] * xp[c][q + kh*dil*Wp + kw*dil]: every tap is one
// offset into the same flat plane, so a run of consecutive q (across
// rows: the Wp-OW positions past each row's end are computed and dropped)
// is a product of full vectors. The kernel keeps 8 output channels x 48
// positions of sums in registers (AVX-512; AVX2's 16 registers hold a
// quarter of that, 4 x 24, and a tile is four calls) and reads each input
// vector once per 8 (4) channels and each weight once per 48 (24)
// positions, from L1, where
// im2col writes K x positions patches (9 values per input value for a 3x3
// kernel) and gemm reads them again to pack: for the few channels of
// small CNNs (ResNet's 16 to 64, an RGB stem) moving patches cost more
// than the products (measured: 4 of 5 ms of a 16-channel 3x3 layer,
// batch 64, 2 cores). This is the zero-memory-overhead direct convolution
// of Zhang, Franchetti and Low, ICML 2018
// (https://proceedings.mlr.press/v80/zhang18d.html), with the rows
// flattened instead of blocked.

// flatRows and flatCols are the kernel's tile: output channels x flat
// positions.
const (
	flatRows = 8
	flatCols = 48
)

// flatWeights are W packed for the kernel: per group and block of
// flatRows output channels, [channel][tap][flatRows] (zero rows past the
// group's output channels), and the W they were packed from.
type flatWeights struct {
	src    *byte
	blocks int // per group
	w      []float32
}

// useFlat reports whether the convolution takes the shifted-sum kernel:
// float32 (checked by the caller), stride 1 or 2, at most two spatial axes
// in effect, a vector kernel here (AVX-512, or AVX2 and FMA), at least two tasks (images x groups)
// per core, since its tasks are whole images, and images small enough that
// a task's buffers (its padded input and its output, about one image's
// each) stay under flatMaxBuffer: a large image (a satellite scene) takes
// the patches path, whose buffers are chunks of 512 KiB. The patches path
// also stays for the thick layers (more than 64 input channels per
// group), whose products outweigh their patches.
func useFlat(p convProblem) bool {
	g := p.geo
	if !flatVector || g.k[0] != 1 || g.in[0] != 1 || g.padLo[0] != 0 || g.out[0] != 1 || g.stride[1] > 2 || g.stride[2] > 2 {
		return false
	}
	if p.c/p.group > flatMaxChannels || p.n*p.group < 2*runtime.GOMAXPROCS(0) {
		return false
	}
	// A bound of convFlat's buffer (every phase kept, the positions past
	// the last tile counted whole).
	hq := g.out[1] + (g.k[1]-1)*g.dil[1]/g.stride[1]
	wq := g.out[2] + (g.k[2]-1)*g.dil[2]/g.stride[2]
	mg := (p.m/p.group + flatRows - 1) / flatRows * flatRows
	floats := p.c/p.group*g.stride[1]*g.stride[2]*hq*wq + mg*(g.out[1]*wq+flatCols) + wq + flatCols
	return floats <= flatMaxBuffer/4
}

// flatMaxChannels is the most input channels per group useFlat takes.
const flatMaxChannels = 64

// flatMaxBuffer bounds a task's buffer in the shifted-sum path (bytes):
// the largest of the exported test models' layers needs 0.3 MiB.
const flatMaxBuffer = 4 << 20

// flatWeightsOf returns W packed for the kernel: kept when W is a
// constant, else packed for this run.
func (c *conv) flatWeightsOf(w []float32, p convProblem) *flatWeights {
	src := (*byte)(unsafe.Pointer(unsafe.SliceData(w)))
	if fw := c.flat.Load(); fw != nil && fw.src == src {
		return fw
	}
	cg, mg, taps := p.c/p.group, p.m/p.group, p.geo.kSize()
	blocks := (mg + flatRows - 1) / flatRows
	fw := &flatWeights{src: src, blocks: blocks, w: make([]float32, p.group*blocks*cg*taps*flatRows)}
	for g := range p.group {
		for co := range mg {
			b, r := co/flatRows, co%flatRows
			blk := fw.w[(g*blocks+b)*cg*taps*flatRows:]
			wm := w[(g*mg+co)*cg*taps:]
			for ci := range cg {
				for t := range taps {
					blk[(ci*taps+t)*flatRows+r] = wm[ci*taps+t]
				}
			}
		}
	}
	if c.constW.Load() {
		c.flat.Store(fw)
	}
	return fw
}

// flatLayout is where the kernel finds each tap of a convolution: the
// padded input of each channel is cut into the stride's phases (the rows
// congruent to a mod stride[1] and columns to b mod stride[2]; one phase
// for stride 1), each a plane of hq x wq, and only the phases some tap
// reads are kept. Tap (kh, kw) of output (oh, ow) then reads phase
// (kh*dil%s, kw*dil%s) at (oh + kh*dil/s, ow + kw*dil/s): the flat
// position oh*wq + ow plus the tap's offset.
type flatLayout struct {
	oh, ow, hq, wq int
	phases         [][2]int // the phases kept, in the order of their planes
	plane          int      // floats per channel: len(phases) planes
	offs           []int    // per tap (kh, kw), row-major
}

// set makes l the layout of g, reusing its lists.
func (l *flatLayout) set(g geometry) {
	sh, sw := g.stride[1], g.stride[2]
	*l = flatLayout{oh: g.out[1], ow: g.out[2], phases: l.phases[:0], offs: l.offs[:0]}
	l.hq = l.oh + (g.k[1]-1)*g.dil[1]/sh
	l.wq = l.ow + (g.k[2]-1)*g.dil[2]/sw
	for kh := range g.k[1] {
		for kw := range g.k[2] {
			dh, dw := kh*g.dil[1], kw*g.dil[2]
			ph := [2]int{dh % sh, dw % sw}
			i := slices.Index(l.phases, ph) // at most stride[1] x stride[2]
			if i < 0 {
				i = len(l.phases)
				l.phases = append(l.phases, ph)
			}
			l.offs = append(l.offs, i*l.hq*l.wq+dh/sh*l.wq+dw/sw)
		}
	}
	l.plane = len(l.phases) * l.hq * l.wq
}

// flatRun is one run of convFlat, what its tasks share (pooled with its
// lists, so that a run allocates nothing).
type flatRun struct {
	p                       convProblem
	x, y                    []float32
	fw                      *flatWeights
	l                       flatLayout
	bb                      []float32 // the bias in blocks of flatRows, zero past each group's channels
	xlen, ylen, qs, qn, blk int
}

var flatRuns = sync.Pool{New: func() any { return new(flatRun) }}

// convFlat computes a float32 convolution (useFlat) by the shifted-sum
// kernel, one task per image and group.
func convFlat(p convProblem, x []float32, fw *flatWeights, bias, y []float32) {
	r := flatRuns.Get().(*flatRun)
	defer flatRuns.Put(r)
	g := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	r.l.set(g)
	l := &r.l
	r.qs = l.oh * l.wq                                 // flat positions computed
	r.qn = (r.qs + flatCols - 1) / flatCols * flatCols // rounded up to tiles
	// The last tile reads the last channel's planes up to qn-1+max(offs):
	// under its end + qn-qs + wq.
	r.xlen = cg*l.plane + (r.qn - r.qs) + l.wq
	r.ylen = fw.blocks * flatRows * r.qn
	taps := len(l.offs)
	r.blk = cg * taps * flatRows
	nb := p.group * fw.blocks * flatRows
	r.bb = slices.Grow(r.bb[:0], nb)[:nb]
	clear(r.bb)
	if bias != nil {
		for grp := range p.group {
			copy(r.bb[grp*fw.blocks*flatRows:], bias[grp*mg:(grp+1)*mg])
		}
	}
	r.p, r.x, r.y, r.fw = p, x, y, fw
	parallel.EachTasks(p.n*p.group, 2*cg*taps*mg*r.qs, r)
	r.p, r.x, r.y, r.fw = convProblem{}, nil, nil, nil // hold none of the run's
}

// Task computes image t/group, group t%group.
func (r *flatRun) Task(t int) {
	p, l, fw := &r.p, &r.l, r.fw
	g := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	oh, ow, wq, qs, qn := l.oh, l.ow, l.wq, r.qs, r.qn
	P, inSize := g.outSize(), g.inSize()
	img, grp := t/p.group, t%p.group
	buf := getFloats(r.xlen + r.ylen)
	defer putFloats(buf)
	xp, yt := (*buf)[:r.xlen], (*buf)[r.xlen:]
	// An input with nothing to pad (stride 1, no padding: a 1x1 layer's)
	// is read where it is, but for the last image, whose last tile would
	// read past X's end; and where every position of a row is an output
	// (wq == ow) and the blocks are whole, the whole tiles are written
	// straight into Y's planes: only the last tile goes through yt.
	// Measured at one thread (fastest of 40 runs a step, alternating
	// binaries, two pairs): the test MobileNetV2 at batch 64, its 1x1
	// layers of 8 channels in, 32 x 32 to 48 channels 1.71 -> 1.38 ms, 16 x
	// 16 to 48 0.75 -> 0.60, 32 x 32 to 8 (with the residual) 0.40 -> 0.28.
	xbase := (img*p.c + grp*cg) * inSize
	if g.stride[1] == 1 && g.stride[2] == 1 && g.padLo[1] == 0 && g.padLo[2] == 0 && l.wq == g.in[2] && l.hq == g.in[1] && xbase+r.xlen <= len(r.x) {
		xp = r.x[xbase : xbase+r.xlen]
	} else {
		flatPad(xp, r.x[xbase:], cg, g, *l)
	}
	yg := r.y[(img*p.m+grp*mg)*P:]
	direct := wq == ow && mg%flatRows == 0
	done := 0 // positions written straight into Y
	wg := fw.w[grp*fw.blocks*r.blk:]
	for q0 := 0; q0 < qs; q0 += flatCols {
		for b := range fw.blocks {
			bo := (grp*fw.blocks + b) * flatRows
			if direct && q0+flatCols <= qs {
				flatTile(yg[b*flatRows*P+q0:], P, xp[q0:], l.plane, l.offs, wg[b*r.blk:(b+1)*r.blk], cg, r.bb[bo:bo+flatRows])
				done = q0 + flatCols
				continue
			}
			flatTile(yt[b*flatRows*qn+q0:], qn, xp[q0:], l.plane, l.offs, wg[b*r.blk:(b+1)*r.blk], cg, r.bb[bo:bo+flatRows])
		}
	}
	// The computed rows, less the positions past each row's end, into
	// the output's planes.
	for co := range mg {
		src, dst := yt[co*qn:], yg[co*P:(co+1)*P]
		if wq == ow {
			copy(dst[done:], src[done:P])
			continue
		}
		for r := range oh {
			copy(dst[r*ow:(r+1)*ow], src[r*wq:r*wq+ow])
		}
	}
	p.finish(r.y, (img*p.m+grp*mg)*P, mg, P, P)
}

// flatPad writes the cg channels at x (2-D geometry g) into xp as l's
// phase planes: phase (a, b)'s element (i, j) is the padded input's at
// (stride*i + a, stride*j + b), the input's at that less padLo, zero in
// the padding and in xp's tail past the planes.
func flatPad(xp, x []float32, cg int, g geometry, l flatLayout) {
	ih, iw := g.in[1], g.in[2]
	sh, sw := g.stride[1], g.stride[2]
	top, left := g.padLo[1], g.padLo[2]
	if sh == 1 && sw == 1 && top == 0 && left == 0 && l.wq == iw && l.hq == ih {
		n := copy(xp, x[:cg*ih*iw])
		clear(xp[n:])
		return
	}
	clear(xp)
	// With stride 2 across, the two column phases of a row phase, where
	// both are kept, are written together: each input row split into its
	// even and odd columns (deint2, vectors), not a value at a time.
	// Measured at one thread (fastest of 40 runs a step, alternating
	// binaries, two pairs): the test MobileNetV2's 3x3 stride-2 stem on
	// 3 channels at batch 64, 1.46 -> 0.91 ms.
	var pair [2]int // per row phase, the plane of its column phase 0 where phase 1 follows it; else -1
	pair[0], pair[1] = -1, -1
	if sw == 2 && sh <= 2 {
		for k := 0; k+1 < len(l.phases); k++ {
			if a := l.phases[k]; a[1] == 0 && l.phases[k+1] == [2]int{a[0], 1} {
				pair[a[0]] = k
			}
		}
	}
	for c := range cg {
		xc := x[c*ih*iw:]
		for k, ph := range l.phases {
			if k0 := pair[min(ph[0], 1)]; k0 >= 0 && (k == k0 || k == k0+1) {
				if k == k0 {
					flatPairs(xp[c*l.plane+k0*l.hq*l.wq:], xp[c*l.plane+(k0+1)*l.hq*l.wq:], xc, ph[0], g, l)
				}
				continue
			}
			pl := xp[c*l.plane+k*l.hq*l.wq:]
			// Columns j of the phase whose input column sw*j+b-left is in
			// [0, iw).
			j0 := max(0, (left-ph[1]+sw-1)/sw)
			j1 := min(l.wq, (iw+left-ph[1]+sw-1)/sw)
			if j1 <= j0 {
				continue
			}
			for i := range l.hq {
				r := sh*i + ph[0] - top
				if r < 0 || r >= ih {
					continue
				}
				src := xc[r*iw:]
				dst := pl[i*l.wq:]
				if sw == 1 {
					c0 := j0 + ph[1] - left
					copy(dst[j0:j1], src[c0:c0+j1-j0])
					continue
				}
				for j := j0; j < j1; j++ {
					dst[j] = src[sw*j+ph[1]-left]
				}
			}
		}
	}
}

// flatPairs writes row phase a of one channel's input x (2-D geometry g,
// stride 2 across) into its two column phases, p0 (columns 0, 2, 4, ...
// of the padded input) and p1 (1, 3, 5, ...), planes of l.hq x l.wq
// already zero: input column c is padded column c+left, in phase
// (c+left)%2 at (c+left)/2.
func flatPairs(p0, p1, x []float32, a int, g geometry, l flatLayout) {
	ih, iw, sh := g.in[1], g.in[2], g.stride[1]
	top, left := g.padLo[1], g.padLo[2]
	// The phase's rows i whose input row sh*i+a-top is in [0, ih).
	i0 := max(0, (top-a+sh-1)/sh)
	i1 := min(l.hq, (ih+top-a+sh-1)/sh)
	if i1 <= i0 {
		return
	}
	ph := [2][]float32{p0, p1}
	even, odd := ph[left%2][left/2:], ph[(left+1)%2][(left+1)/2:]
	// Pairs of input columns (2i, 2i+1) whose places are in the phases.
	n := max(0, min(iw/2, l.wq-(left+1)/2))
	src := x[(sh*i0+a-top)*iw:]
	deint2(even[i0*l.wq:], odd[i0*l.wq:], src, i1-i0, n, l.wq, sh*iw)
	for i := i0; i < i1; i++ { // the columns past the pairs
		row := x[(sh*i+a-top)*iw:][:iw]
		for c := 2 * n; c < iw; c++ {
			if j := (c + left) / 2; j < l.wq {
				ph[(c+left)%2][i*l.wq+j] = row[c]
			}
		}
	}
}

// flatTileGo is flatTileAVX512 in Go: out[r*ldo+j] = bias[r] + sum over
// c < chans, t < len(offs) of w[(c*len(offs)+t)*flatRows+r] *
// x[c*plane+offs[t]+j].
func flatTileGo(out []float32, ldo int, x []float32, plane int, offs []int, w []float32, chans int, bias []float32) {
	var acc [flatRows][flatCols]float32
	for r := range acc {
		fillCopies(acc[r][:], bias[r])
	}
	taps := len(offs)
	for c := range chans {
		xc := x[c*plane:]
		for t, off := range offs {
			xs := xc[off : off+flatCols]
			ws := w[(c*taps+t)*flatRows : (c*taps+t+1)*flatRows]
			for r, wv := range ws {
				a := &acc[r]
				for j, v := range xs {
					a[j] += wv * v
				}
			}
		}
	}
	for r := range flatRows {
		copy(out[r*ldo:r*ldo+flatCols], acc[r][:])
	}
}
