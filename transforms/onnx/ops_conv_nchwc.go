package onnx

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
)

// Conv in a blocked channel layout (NCHWc, as ONNX Runtime's MLAS lays out
// its convolutions: https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/core/mlas/lib/snchwc.cpp):
// a direct convolution with no patches matrix and no packing per run.
//
// The input is copied, an image at a time, into blocks of 16 channels, each a
// padded image of 16-float pixels ([N][C/16][Hp][Wp][16], the padding and
// the channels past C zeros), so that the kernel needs no bounds (where
// the plan keeps X in that layout, plan_layout.go, the copy only adds the
// padding, and a convolution that reads no padding reads X itself): output
// (oh, ow) under tap (kh, kw) reads the pixel at (oh*sh + kh*dh, ow*sw +
// kw*dw). W is packed once per node in the order the kernel reads it: per
// group of fb blocks of 16 output channels, [C/16][kh][kw][16 inputs][fb][16
// outputs]. The kernel (ops_conv_nchwc_gen.go) keeps fb x np sums (fb
// blocks of 16 output channels, np consecutive output positions of a row,
// nchwcMaxPositions) in registers and, for each input channel and tap, multiplies one
// filter vector per block by the broadcast input value under each
// position: fb + np loads from L1 and L2 per fb x np FMAs, where the
// patches path writes K x positions patches (9 values per input value of a
// 3x3 kernel) and packs them again. The sums of one output row of a group
// land in a task's scratch, blocked, and are written into the output's
// planes (NCHW) at once, then through the fused epilogue while in cache;
// for a Y the plan keeps blocked they land in Y, and the epilogue runs
// there (a blocked residual is added in the blocks, before the planes,
// whatever Y's layout; to a blocked Y by the dense kernels themselves, as
// they store the sums, as MLAS adds its convolutions' Sum input).
//
// A convolution of a few input channels (a network's first, on color:
// useNCHWcIn1) reads its input NCHW: its padded copy is of planes, and the
// kernels (...C1) take one channel a step, each channel a "block" (bi = 1
// input channels a block, not 16).
//
// AVX-512 runs fb up to 4 (24 sums, one register each: 12 positions of 1
// or 2 blocks, 6 of 4); AVX2 one block of 16 channels as two registers (6
// positions, 12 sums); the plain Go loop (nchwcTileGo)
// does the same steps, for the tests and where no kernel runs.

// nchwcBlock is the channels of a block.
const nchwcBlock = 16

// nchwcPositions is the most output positions of one kernel call, and
// nchwcSums the most sums (blocks x positions): AVX-512's registers hold 24
// sums and enough for 12 positions of one or two blocks (8 of 3, 6 of 4),
// at least the 8 sums in flight that cover the FMA's latency on both of a
// core's FMA units; AVX2's hold 6 positions of a block (12 registers).
const (
	nchwcPositions    = 12
	nchwcSums         = 24
	nchwcPositions256 = 6
)

// nchwcMaxPositions is the most output positions of one call of the
// kernel of fbg blocks at this width.
func nchwcMaxPositions(fbg int) int {
	if nchwcWidth == 8 {
		return nchwcPositions256
	}
	return min(nchwcPositions, nchwcSums/fbg)
}

// nchwcDwMaxPositions is the most output positions of one call of the
// depthwise kernel at this width.
func nchwcDwMaxPositions() int {
	if nchwcWidth == 8 {
		return nchwcPositions256
	}
	return nchwcPositions
}

// nchwcWeights are W packed for the kernels (per group of fb output
// blocks, [C/16][kh][kw][16][fb][16], zeros past C and M), and the W they
// were packed from.
type nchwcWeights struct {
	src       *byte
	fb        int  // output blocks per group
	bi        int  // input channels a block: 16, or 1 (NCHW input, nchwcIn1)
	depthwise bool // packed by nchwcDwWeightsOf
	w         []float32
}

// nchwcGroupBlocks is the output blocks per kernel call at this width.
func nchwcGroupBlocks(width int) int {
	if width == 8 {
		return 1
	}
	return 4
}

// nchwcGroupBlocksOf is the output blocks per kernel call for p's
// convolution at this width: nchwcGroupBlocks, but 3 on AVX-512 for a
// batch of images whose output rows (not pointwise: a pointwise
// convolution's rows are runs of the whole plane) have 7 or 8 positions,
// where M has 12 blocks or more. Four blocks' calls take 6 positions at
// most: a row of 7 took two calls, of 4 and 3 positions (16 and 12 of the
// 24 sums the registers hold: each input value and weight vector loaded
// for fewer multiply-adds), where three blocks' take it in one call of 21
// sums, every input block at once (nchwcChunkBlocks); the last group, of
// M's blocks past a multiple of 3, has fewer. Measured (fastest of 40 runs
// a step, alternating binaries, two to five pairs), ResNet-50's 3x3 layers
// of 512 channels on 7 x 7 outputs: at batch 8 28.8 -> 27.6 ms (one
// thread) and 14.4 -> 13.7 (two), the stride-2 one 14.8 -> 14.5 and 7.5 ->
// 7.1; ConvNeXt-tiny's 2x2 384 -> 768 layer at batch 8 7.6 -> 7.1. At batch
// 1 they took 4.14 -> 4.31 ms (and 4.22 with the four blocks' chunks): an
// image's weights, 9.4 MB a layer, are long out of the caches at each run,
// and the chunks of four blocks read them in bursts the kernel reuses at
// once. On rows of 14 (256 channels, the last group of one block) three
// blocks were slower, 57.6 -> 58.6 ms.
func nchwcGroupBlocksOf(p convProblem, width int) int {
	fb := nchwcGroupBlocks(width)
	if w := p.geo.out[2]; width == 16 && p.n > 1 && !p.pointwise() && w > nchwcSums/fb && w <= nchwcSums/3 && (p.m+nchwcBlock-1)/nchwcBlock >= 12 {
		return 3
	}
	return fb
}

// useNCHWc reports whether a float32 convolution takes the blocked kernel:
// a vector kernel here, one group, two spatial axes at most, input
// channels enough (nchwcMinChannels) that the blocks are mostly channels,
// not zeros, and products deep enough (nchwcMinDepth) to pay for moving
// each output value from the blocks into its plane. Measured on
// MobileNetV2's and ResNet's layers (BenchmarkConvLayers, one thread,
// AVX-512): 1x1 convolutions of 16 to 32 channels ran at 17 to 20 GFLOP/s
// blocked, 27 to 39 by the shifted sums or the patches; 144 channels and
// more, and every 3x3 of 64 and more, ran faster blocked (3x3 of 128 to 512
// channels: 90 to 135 GFLOP/s against 65 to 95).
func useNCHWc(p convProblem) bool {
	g := p.geo
	if nchwcWidth == 0 || p.group != 1 || g.k[0] != 1 || g.in[0] != 1 || g.padLo[0] != 0 || g.out[0] != 1 {
		return false
	}
	return p.c >= nchwcMinChannels && p.c*g.kSize() >= nchwcMinDepth && nchwcCopyFits(p)
}

// nchwcIn1 reports whether the blocked kernel takes convolution p's
// input as it is, NCHW, one channel a step (the kernels ...C1): a
// convolution of fewer input channels than a block (a network's first,
// on 3 channels of color), whose blocks would be mostly zeros. Its
// padded copy is of NCHW planes (bi = 1).
func nchwcIn1(p convProblem) bool { return p.c < nchwcMinChannels && p.group == 1 }

// useNCHWcIn1 reports whether a float32 convolution of fewer input
// channels than a block (nchwcIn1) takes the blocked kernel, NCHW in: a
// network's first layer, of at most nchwcIn1MaxChannels channels (color)
// and outputs that fill blocks (at least 16). Measured at one thread
// (AVX-512; the layer's fastest of 20 runs in one process, patches or
// shifted sums -> blocked): mobilenet_v3_small's 3x3 stride-2 layer to
// 16 channels at batch 32 20.0 -> 11.3 ms, efficientnet_b0's to 32 at
// batch 8 10.2 -> 7.1, resnet50's 7x7 to 64 at batch 8 21.7 -> 18.7, the
// test ResNet's 3x3 stride-1 to 16 at batch 64 4.6 -> 4.7; but the test
// MobileNetV2's to 8 channels (half a block) 1.6 -> 2.7, and its 1x1
// layers of 8 channels were slower too (a kernel call's loops around one
// channel's step cost as much as its products).
func useNCHWcIn1(p convProblem) bool {
	g := p.geo
	if nchwcWidth == 0 || !nchwcIn1(p) || p.c == 0 || p.c > nchwcIn1MaxChannels || p.m < nchwcBlock ||
		g.k[0] != 1 || g.in[0] != 1 || g.padLo[0] != 0 || g.out[0] != 1 {
		return false
	}
	return nchwcCopyFits(p)
}

// nchwcIn1MaxChannels is the most input channels useNCHWcIn1 takes.
const nchwcIn1MaxChannels = 4

// nchwcPadded is the padded image's rows and columns: every pixel a tap
// reads.
func nchwcPadded(g geometry) (hp, wp int) {
	hp = max(g.padLo[1]+g.in[1], (g.out[1]-1)*g.stride[1]+(g.k[1]-1)*g.dil[1]+1)
	wp = max(g.padLo[2]+g.in[2], (g.out[2]-1)*g.stride[2]+(g.k[2]-1)*g.dil[2]+1)
	return hp, wp
}

// nchwcCopyFits reports whether the blocked path's padded copy of the
// input (its size decided by the model's pads, strides and dilations) is
// at most twice the input and output the plan already holds, plus 1 MiB:
// pads of thousands around a small image (a hostile or broken model) would
// otherwise make a copy far past the memory budget, where the patches path
// works in chunks of 512 KiB.
func nchwcCopyFits(p convProblem) bool {
	const B = nchwcBlock
	hp, wp := nchwcPadded(p.geo)
	bi := B
	if nchwcIn1(p) {
		bi = 1
	}
	copyFloats := float64(p.n) * float64((p.c+bi-1)/bi*bi) * float64(hp) * float64(wp)
	held := float64(p.n) * (float64(p.c)*float64(p.geo.inSize()) + float64(p.m)*float64(p.geo.outSize()))
	return copyFloats <= 2*held+(1<<18)
}

// nchwcMinChannels is the fewest input channels useNCHWc takes, and
// nchwcMinDepth the shallowest product (channels x taps).
const (
	nchwcMinChannels = 16
	nchwcMinDepth    = 64
)

// nchwcWeightsOf returns W packed for the kernels of the current width:
// kept when W is a constant, else packed for this run.
func (c *conv) nchwcWeightsOf(w []float32, p convProblem) *nchwcWeights {
	src := (*byte)(unsafe.Pointer(unsafe.SliceData(w)))
	fb := nchwcGroupBlocksOf(p, nchwcWidth)
	bi := nchwcBlock
	if nchwcIn1(p) {
		bi = 1
	}
	held := &c.nchwc
	if fb == 3 {
		held = &c.nchwc3
	}
	if nw := held.Load(); nw != nil && nw.src == src && nw.fb == fb && nw.bi == bi && !nw.depthwise {
		return nw
	}
	nw := &nchwcWeights{src: src, fb: fb, bi: bi, w: packNCHWc(w, p.m, p.c, p.geo.k[1], p.geo.k[2], fb, bi)}
	if c.constW.Load() {
		held.Store(nw)
	}
	return nw
}

// nchwcDwWeightsOf returns the depthwise W packed for the kernels (per
// block of 16 channels, [kh][kw][16]): kept when W is a constant.
func (c *conv) nchwcDwWeightsOf(w []float32, p convProblem) *nchwcWeights {
	const B = nchwcBlock
	src := (*byte)(unsafe.Pointer(unsafe.SliceData(w)))
	if nw := c.nchwc.Load(); nw != nil && nw.src == src && nw.depthwise {
		return nw
	}
	taps, mb := p.geo.kSize(), (p.m+B-1)/B
	nw := &nchwcWeights{src: src, fb: 1, bi: B, depthwise: true, w: make([]float32, mb*taps*B)}
	for co := range p.m {
		for t := range taps {
			nw.w[((co/B)*taps+t)*B+co%B] = w[co*taps+t]
		}
	}
	if c.constW.Load() {
		c.nchwc.Store(nw)
	}
	return nw
}

// useNCHWcDepthwise reports whether a float32 depthwise convolution (one
// input and one output channel per group) takes the blocked kernel: a
// vector kernel here, two spatial axes at most, channels enough to fill
// blocks (nchwcMinChannels), and narrow output rows (at most
// nchwcDwMaxWidth), where the plane-by-plane kernel (ops_conv_depthwise.go)
// spends more on each plane's set-up than on its sums. Measured at one
// thread on AVX-512, both forms in alternate runs of one process, ms a
// layer plane by plane -> blocked: the test MobileNetV2 (64x64 images,
// batch 64) 240 channels at 2x2 2.6 -> 0.7, 144 at 4x4 1.8 -> 0.6 to 1.0,
// 96 at 4x4 1.2 -> 0.7, but 48 at 8x8 0.8 -> 0.65 to 1.06 and 48 at 16x16
// 1.0 to 1.4 -> 1.5 to 2.2; mobilenet_v3_small (batch 32) 576 at 7x7 (5x5
// taps) 10.7 -> 6.8, 240 at 14x14 6.9 -> 9.9; efficientnet_b0 (batch 8)
// 1152 at 7x7 4.9 to 5.5 -> 3.8 to 4.2, 480 at 14x14 4.0 -> 5.6.
func useNCHWcDepthwise(p convProblem) bool {
	g := p.geo
	if nchwcWidth == 0 || p.c != p.group || p.m != p.group || g.k[0] != 1 || g.in[0] != 1 || g.padLo[0] != 0 || g.out[0] != 1 {
		return false
	}
	return p.c >= nchwcMinChannels && g.out[2] <= nchwcDwMaxWidth && nchwcCopyFits(p)
}

// nchwcDwMaxWidth is the widest output row useNCHWcDepthwise takes.
const nchwcDwMaxWidth = 7

// packNCHWc packs W (m x c x kh x kw) for the kernels of fb blocks of
// output channels and bi input channels a step (16, or 1: nchwcIn1).
func packNCHWc(w []float32, m, c, kh, kw, fb, bi int) []float32 {
	out := make([]float32, packNCHWcLen(m, c, kh, kw, fb, bi))
	packNCHWcInto(out, w, m, c, kh, kw, fb, bi)
	return out
}

// packNCHWcLen is the floats of packNCHWc's W.
func packNCHWcLen(m, c, kh, kw, fb, bi int) int {
	const B = nchwcBlock
	cb, mb := (c+bi-1)/bi, (m+B-1)/B
	return (mb + fb - 1) / fb * fb * cb * kh * kw * bi * B
}

// packNCHWcInto is packNCHWc into out (packNCHWcLen floats, zeros).
func packNCHWcInto(out, w []float32, m, c, kh, kw, fb, bi int) {
	const B = nchwcBlock
	cb, mb := (c+bi-1)/bi, (m+B-1)/B
	taps := kh * kw
	groups := (mb + fb - 1) / fb
	group := fb * cb * taps * bi * B // floats per whole group
	out = out[:groups*group]
	for g := range groups {
		fbg := min(fb, mb-g*fb)
		dst := out[g*group:]
		for o := range fbg * B {
			co := g*fb*B + o
			if co >= m {
				break
			}
			f, ol := o/B, o%B
			for ci := range c {
				b, il := ci/bi, ci%bi
				for t := range taps {
					dst[((((b*taps)+t)*bi+il)*fbg+f)*B+ol] = w[(co*c+ci)*taps+t]
				}
			}
		}
	}
}

// nchwcRun is one run of convNCHWc, what its tasks share (pooled).
//
// A task computes rows of output positions: an output row of the image
// (len = OW, rowX = sh input rows apart), or for a pointwise convolution,
// whose padded image is its input, runs of len positions over the whole
// plane (rowX = len pixels apart).
type nchwcRun struct {
	p                     convProblem
	x, y, xp, bias        []float32
	xbuf                  []float32 // xp's memory, kept with the run
	nw                    *nchwcWeights
	bi                    int // input channels a block: 16, or 1 (nchwcIn1)
	cb, mb, hp, wp, plane int
	len, rowX, vrows      int
	groups, rows, chunks  int
	img0, imgs            int          // the images being computed (a slab)
	direct                bool         // X is the padded images (blocked, no padding)
	copies                *heldBuffers // the padded copies of the tasks of an image each
	act                   nchwcAct     // the epilogue's activation as the kernels apply it, where actIn (epilogue.act)
	actIn                 bool
	over                  bool // Y is written over Z (Overwriter): the same memory
	dwLean                bool // compute is dwRows (a depthwise layer in the blocks with no residual)
	byRows                bool // a task t is chunk t/groups%chunks of group t%groups: the cores take rows
	prefetch              bool // a task's next group is the next of the image, on the same core (nextWeights)
	// band, where set (a task's copy of the run: pooledRows), is where
	// compute writes a blocked Y's rows from bandRow0 on, its blocks
	// bandLd floats apart.
	band             []float32
	bandRow0, bandLd int
}

// nchwcHeld is the blocked path's run state between runs (convNCHWc).
var nchwcHeld atomic.Pointer[nchwcRun]

// nchwcScratch are the tasks' buffers of blocked sums (*[]float32: a
// pool of their own, so that they grow to the largest row and stay).
var nchwcScratch = sync.Pool{New: func() any { return new([]float32) }}

// nchwcRowLen is the positions of a row of a pointwise convolution's task.
const nchwcRowLen = 96

// convNCHWc computes a float32 convolution (useNCHWc) by the blocked
// kernel, or a depthwise one (useNCHWcDepthwise, nw from nchwcDwWeightsOf).
//
// The run's state and its padded copies (a slab's, at most nchwcSlabBytes
// or one image's; or an image's a core, for batches of a task an image),
// grown to the largest layer's, are kept in nchwcHeld between runs: not a
// sync.Pool, which a garbage collection empties (the copies, megabytes,
// would be allocated again, and their allocation brings on the next
// collection), nor one per node (a model's every blocked layer would hold
// copies). A run concurrent with another takes a new state; one of them is
// kept.
func convNCHWc(p convProblem, x []float32, nw *nchwcWeights, bias, y []float32) {
	const B = nchwcBlock
	g := p.geo
	r := nchwcHeld.Swap(nil)
	if r == nil {
		r = new(nchwcRun)
	}
	defer nchwcHeld.Store(r)
	r.p, r.x, r.y, r.nw = p, x, y, nw
	r.act, r.actIn = p.ep.act()
	r.over = p.layout.y && len(p.z) > 0 && len(y) > 0 && &p.z[0] == &y[0]
	r.dwLean = nw.depthwise && p.layout.y && len(p.z) == 0 && !p.pointwise() && p.m%B == 0
	r.bi = nw.bi
	r.cb, r.mb = (p.c+r.bi-1)/r.bi, (p.m+B-1)/B
	r.hp, r.wp = nchwcPadded(g)
	r.plane = r.hp * r.wp * r.bi
	r.len, r.rowX, r.vrows = nchwcRowOf(p), g.stride[1]*r.wp*r.bi, g.out[1]
	crows := r.vrows          // the convolution's rows, of r.vrows rows of tasks
	if p.layout.pool != nil { // rows of the pooled output (pooledRows)
		r.vrows = p.pool.out[1]
	} else if p.pointwise() {
		r.rowX, r.vrows = r.len*r.bi, (g.outSize()+r.len-1)/r.len
		crows = r.vrows
	}
	r.groups = (r.mb + nw.fb - 1) / nw.fb
	r.bias = grow(r.bias, r.mb*B)
	clear(r.bias)
	copy(r.bias, bias)
	depth := p.c * B * nw.fb // multiply-adds per position and tap
	if r.nw.depthwise {
		depth = B
	}
	// A blocked X with no padding to add is the padded image itself.
	r.direct = p.layout.x && r.hp == g.in[1] && r.wp == g.in[2]
	want := nchwcTasks * runtime.GOMAXPROCS(0)
	if p.n >= want { // images enough for every core: a task an image, one parallel loop
		if r.copies == nil {
			r.copies = new(heldBuffers)
		}
		r.prefetch = true
		parallel.EachWith(p.n, 2*depth*g.kSize()*r.groups*crows*r.len, *r, (*nchwcRun).image)
		r.p, r.x, r.y, r.xp, r.nw = convProblem{}, nil, nil, nil, nil // hold none of the run's
		return
	}
	// Else a slab of images at a time, their groups' tasks shared by the
	// cores: as many images as make tasks enough (no more than
	// nchwcSlabBytes of padded copies), and rows cut where even those are
	// too few. A parallel loop's start and end cost the cores tens of
	// microseconds on a VM: at two threads (2-core VM, BenchmarkZoo, two
	// rounds) an image at a time -> a task an image, one loop a layer: the
	// test MobileNetV2 at batch 64 25 -> 14 to 16 ms (15 at one thread),
	// mobilenet_v3_small at batch 32 105 to 115 -> 53 to 57, efficientnet_b0
	// at batch 8 124 to 167 -> 82 to 93, resnet50 at batch 8 408 to 424 ->
	// 349 to 359.
	imgs := 1
	if r.groups < want {
		imgs = min(p.n, (want+r.groups-1)/r.groups)
		if !r.direct {
			imgs = max(1, min(imgs, nchwcSlabBytes/(4*r.cb*r.plane)))
		}
	}
	r.rows, r.chunks = r.vrows, 1
	chunks := 1
	if tasks := imgs * r.groups; tasks < want {
		chunks = (want + tasks - 1) / tasks
	}
	// Fewer images than cores, and weights of at most nchwcRowsWeights
	// times the images' padded input: the cores take rows of the output,
	// every group of a row (byRows), not groups of every row. Each core
	// then reads the rows the layer before wrote on it (a network's
	// layers at batch 1 cut the same way, its Winograd layers by tiles of
	// rows too), and writes the rows the next reads on it; each reads the
	// weights whole, which cost less. ResNet-50 at batch 1, two threads
	// (2-core Zen 5 VM, fastest of 30 runs, one build, the two ways
	// alternating): 30.3 -> 27.2, 30.2 -> 28.8, 29.7 -> 28.8, 30.4 -> 30.1
	// ms, its 1x1 layers with the residual 0.44-0.48 -> 0.29-0.30 ms each;
	// in the VM's faster spells, where the other core's lines come
	// cheaper, level (21.1-21.4 against 21.4-22.0).
	procs := runtime.GOMAXPROCS(0)
	if r.byRows = nchwcByRows(procs, imgs, len(nw.w), imgs*r.cb*r.plane, nw.depthwise); r.byRows {
		chunks = max(chunks, procs)
	}
	if chunks > 1 {
		r.chunks = min(r.vrows, chunks)
		r.rows = (r.vrows + r.chunks - 1) / r.chunks
		r.chunks = (r.vrows + r.rows - 1) / r.rows
	}
	if !r.direct {
		r.xbuf = grow(r.xbuf, imgs*r.cb*r.plane)
	}
	cost := 2 * depth * g.kSize() * r.len * r.rows * crows / r.vrows
	r.prefetch = r.chunks == 1 && parallel.Workers(imgs*r.groups*r.chunks, cost) == 1
	for r.img0 = 0; r.img0 < p.n; r.img0 += imgs {
		r.imgs = min(imgs, p.n-r.img0)
		if r.direct {
			r.xp = x[r.img0*r.cb*r.plane:][:r.imgs*r.cb*r.plane]
		} else {
			r.xp = r.xbuf
			parallel.EachWith(r.imgs*r.cb, 2*r.plane, *r, (*nchwcRun).pack)
		}
		parallel.EachWith(r.imgs*r.groups*r.chunks, cost, *r, (*nchwcRun).task)
	}
	r.p, r.x, r.y, r.xp, r.nw = convProblem{}, nil, nil, nil, nil // hold none of the run's
}

// nextWeights are the weights of the group of output blocks that a task
// computes next, brought into L2 a few cache lines at each kernel call of
// the group before it. A group's weights are read from L2 at every call
// but its first, which waits on the rest of the memory system for them:
// a run at batch 1 finds them long out of the caches, at each of the
// groups in turn. Taken where a core's next group is known (a task an
// image, every group in order; or one goroutine, a task a group) and the
// group's weights take at most nchwcPrefetchBytes, a quarter of the L2 of
// Intel's Sapphire Rapids (2 MiB): the current group's stay. Measured on
// ResNet-50 at one thread (fastest of 40 runs a step, alternating
// binaries, two or three pairs): at batch 1, its 1x1 layers 4.5 -> 4.0 ms
// (256 -> 1024 channels with the residual), 3.46 -> 3.28, 1.79 -> 1.68,
// 1.90 -> 1.82, the steps 58.1 -> 56.3; at batch 8, the same layers 35.6
// -> 32.2 ms, 26.8 -> 26.1, 19.6 -> 18.6, the steps 451 -> 442. Groups of
// 1.2 MB (512-channel 3x3 layers) took 4.14 -> 4.40 ms so; prefetched on
// two cores, a group the other core may take, the steps at batch 1 31.6 ->
// 34.2 ms. A group taken in chunks of input blocks (nchwcChunkBlocks)
// prefetches each chunk's next one, on any core: ResNet-50's 512-channel
// 3x3 layers at batch 1, one thread, 4.21 -> 4.10 ms and 2.15 -> 2.10
// (stride 2), the rest 1% slower in the same runs; two threads 2.27 ->
// 2.15.
type nextWeights struct {
	rest []float32 // the lines not yet asked for
	step int       // lines a call
}

// nchwcPrefetchLines is the most cache lines nextWeights asks for at a
// call (a call takes thousands of cycles; the L2 keeps a few dozen misses
// in flight), and nchwcPrefetchBytes the largest group it prefetches.
const (
	nchwcPrefetchLines = 32
	nchwcPrefetchBytes = 512 << 10
)

// start spreads w's lines over calls kernel calls.
func (n *nextWeights) start(w []float32, calls int) {
	n.rest = w
	n.step = min(nchwcPrefetchLines, (len(w)/16+max(calls, 1)-1)/max(calls, 1))
}

// call asks for the next lines and returns how many.
func (n *nextWeights) call() int {
	k := min(n.step, len(n.rest)/16)
	if k > 0 {
		prefetchL2(&n.rest[0], k)
		n.rest = n.rest[k*16:]
	}
	return k
}

// heldBuffers are buffers that tasks take and give back, kept (unlike a
// sync.Pool's, which a garbage collection empties).
type heldBuffers struct {
	mu   sync.Mutex
	free []*[]float32
}

// get returns a buffer of n floats.
func (h *heldBuffers) get(n int) *[]float32 {
	h.mu.Lock()
	var b *[]float32
	if k := len(h.free); k > 0 {
		b, h.free = h.free[k-1], h.free[:k-1]
	}
	h.mu.Unlock()
	if b == nil {
		b = new([]float32)
	}
	*b = grow(*b, n)
	return b
}

// put gives b back.
func (h *heldBuffers) put(b *[]float32) {
	h.mu.Lock()
	h.free = append(h.free, b)
	h.mu.Unlock()
}

// nchwcRowsWeights bounds the weights of a layer whose cores take rows
// of the output (byRows): this many times the images' padded input (at 1
// and at 1000, ResNet-50 at batch 1 on two threads took 1-4% longer).
const nchwcRowsWeights = 4

// nchwcByRows reports whether procs cores take rows of a slab of imgs
// images (byRows): fewer images than cores, not a depthwise layer (a task
// a block reads its block alone), and weights (floats) of at most
// nchwcRowsWeights times the slab's padded input (floats).
func nchwcByRows(procs, imgs, weights, input int, depthwise bool) bool {
	return procs > 1 && imgs < procs && !depthwise && weights <= nchwcRowsWeights*input
}

// nchwcTasks is the tasks a core a parallel loop of convNCHWc wants (its
// tasks' costs differ: a core that ends early takes another). A variable
// for the tests.
var nchwcTasks = 4

// nchwcSlabBytes bounds the padded copies of a slab of images (bytes; one
// image's copy may be more). A variable for the tests.
var nchwcSlabBytes = 2 << 20

// pack copies channel block t%cb of the slab's image t/cb into its padded
// block (the slab's t-th).
func (r *nchwcRun) pack(t int) {
	r.packBlock(r.img0+t/r.cb, t%r.cb, r.xp[t*r.plane:(t+1)*r.plane])
}

// packBlock copies channel block b of image img into its padded block dst.
func (r *nchwcRun) packBlock(img, b int, dst []float32) {
	const B = nchwcBlock
	g, p := r.p.geo, &r.p
	h, w, pt, pl := g.in[1], g.in[2], g.padLo[1], g.padLo[2]
	if r.bi == 1 { // channel b's plane, padded
		clear(dst[:pt*r.wp])
		clear(dst[(pt+h)*r.wp:])
		src := r.x[(img*p.c+b)*h*w:][:h*w]
		for y := range h {
			row := dst[(pt+y)*r.wp : (pt+y+1)*r.wp]
			clear(row[:pl])
			copy(row[pl:pl+w], src[y*w:])
			clear(row[pl+w:])
		}
		return
	}
	chans := min(B, p.c-b*B)
	if p.layout.x { // rows of 16-float pixels, the channels past C zeros
		chans = B
	}
	if chans < B || p.layout.x && w < B {
		clear(dst) // the channels past C too; narrow rows' padding in one call, not four a row
	} else {
		clear(dst[:pt*r.wp*B])
		clear(dst[(pt+h)*r.wp*B:])
		for y := pt; y < pt+h; y++ {
			row := dst[y*r.wp*B : (y+1)*r.wp*B]
			clear(row[:pl*B])
			clear(row[(pl+w)*B:])
		}
	}
	if p.layout.x {
		src := r.x[(img*r.cb+b)*h*w*B:][:h*w*B]
		for y := range h {
			copy(dst[((pt+y)*r.wp+pl)*B:][:w*B], src[y*w*B:])
		}
		return
	}
	src := r.x[(img*p.c+b*B)*h*w:]
	if chans == B && w < B && r.wp != w && h*w >= B && packNarrow(dst[(pt*r.wp+pl)*B:], r.wp*B, src, h, w) {
		return
	}
	rows, cols := h, w
	if r.wp == w { // no padding left or right: the rows are one run
		rows, cols = 1, h*w
	}
	for y := range rows {
		row := dst[((pt+y)*r.wp+pl)*B:]
		x0 := 0
		if chans == B {
			for ; x0+B <= cols && transpose16(row[x0*B:], B, src[y*cols+x0:], h*w); x0 += B {
			}
			if x0 < cols && x0 > 0 && transpose16(row[(cols-B)*B:], B, src[y*cols+cols-B:], h*w) {
				x0 = cols // the last 16 again, overlapping
			}
		}
		for c := 0; x0 < cols && c < chans; c++ {
			sr := src[c*h*w+y*cols : c*h*w+(y+1)*cols]
			for x := x0; x < cols; x++ {
				row[x*B+c] = sr[x]
			}
		}
	}
}

// packNarrow copies 16 planes of h rows of w < 16 pixels (src, h*w
// floats apart) into blocked rows of 16-float pixels (dst, its rows ldd
// floats apart): 16 pixels of the flattened planes at a time transposed
// aside (the last 16 again, overlapping), then their runs of a row copied
// into place. It reports false, having written nothing, where no vector
// kernel runs. Rows that narrow would otherwise move every value alone:
// the test MobileNetV2's depthwise layers on 8 x 8 images (NCHW in) at
// batch 64, one thread, the three 0.91 -> 0.37 ms (fastest of 40 runs a
// step, alternating binaries, two pairs).
func packNarrow(dst []float32, ldd int, src []float32, h, w int) bool {
	const B = nchwcBlock
	var tmp [B * B]float32
	hw := h * w
	for q := 0; q < hw; q += B {
		q = min(q, hw-B)
		if !transpose16(tmp[:], B, src[q:], hw) {
			return false
		}
		for i := 0; i < B; {
			y, x := (q+i)/w, (q+i)%w
			run := min(w-x, B-i)
			copy(dst[y*ldd+x*B:][:run*B], tmp[i*B:])
			i += run
		}
	}
	return true
}

// task computes rows chunk of group g of the slab's image i (t =
// (i*groups + g)*chunks + chunk, or (i*chunks + chunk)*groups + g
// byRows).
func (r *nchwcRun) task(t int) {
	li, grp, ch := t/(r.groups*r.chunks), t/r.chunks%r.groups, t%r.chunks
	if r.byRows {
		ch, grp = t/r.groups%r.chunks, t%r.groups
	}
	row0 := ch * r.rows
	r.rowsOf(r.img0+li, grp, row0, min(r.vrows, row0+r.rows), r.inputOf(grp, r.xp[li*r.cb*r.plane:][:r.cb*r.plane]))
}

// rowsOf computes rows row0 to row1 of group grp of image img: compute's,
// or the pooled output's (pooledRows).
func (r *nchwcRun) rowsOf(img, grp, row0, row1 int, x []float32) {
	if r.p.layout.pool != nil {
		r.pooledRows(img, grp, row0, row1, x)
		return
	}
	r.compute(img, grp, row0, row1, x)
}

// inputOf is what compute reads for group grp of an image whose padded
// copy is x: all of it, or a depthwise layer's block grp alone.
func (r *nchwcRun) inputOf(grp int, x []float32) []float32 {
	if r.nw.depthwise {
		return x[grp*r.plane:][:r.plane]
	}
	return x
}

// image computes image img whole (every group, every row), its padded
// copy made in a buffer of the task's own (or X itself, direct).
func (r *nchwcRun) image(img int) {
	if r.direct {
		x := r.x[img*r.cb*r.plane:][:r.cb*r.plane]
		for grp := range r.groups {
			r.rowsOf(img, grp, 0, r.vrows, r.inputOf(grp, x))
		}
		return
	}
	// A depthwise layer's blocks one at a time (each reads its own): each
	// block's padded copy computed while it is in L2, where the image's
	// copies made first (megabytes on large planes) went out to memory and
	// were read back. efficientnet_b0 at batch 8, one thread (fastest of 40 runs a step,
	// alternating binaries, two pairs): its depthwise layers on 112 x 112
	// 7.31 -> 5.45 ms (96 channels, stride 2) and 5.25 -> 4.45 (32), on
	// 56 x 56 5.30 -> 4.47 (3x3) and 2.60 -> 1.92 (5x5, stride 2), the
	// model's steps 106.0 -> 99.0 (ONNX Runtime's profiler: 98.1); two
	// threads, the first two 3.98 -> 3.08 and 3.03 -> 2.58. ConvNeXt-tiny
	// at batch 8 (its 7x7 layers, written channels last), one thread:
	// 17.97 -> 15.42 ms (384 channels), 9.07 -> 8.25 (192), 2.62 -> 2.14
	// (768), 16.81 -> 17.22 (96, on 56 x 56: noise or not), the model's
	// steps 655.7 -> 645.7.
	if r.nw.depthwise {
		buf := r.copies.get(r.plane)
		x := (*buf)[:r.plane]
		for b := range r.cb {
			r.packBlock(img, b, x)
			r.compute(img, b, 0, r.vrows, x)
		}
		r.copies.put(buf)
		return
	}
	buf := r.copies.get(r.cb * r.plane)
	x := *buf
	for b := range r.cb {
		r.packBlock(img, b, x[b*r.plane:(b+1)*r.plane])
	}
	for grp := range r.groups {
		r.rowsOf(img, grp, 0, r.vrows, x)
	}
	r.copies.put(buf)
}

// compute computes rows row0 to row1 of group grp of image img from x, its
// padded copy (cb blocks of plane floats; a depthwise layer's block grp
// alone: inputOf).
func (r *nchwcRun) compute(img, grp, row0, row1 int, x []float32) {
	if r.dwLean {
		r.dwRows(img, grp, row0, row1, x)
		return
	}
	const B = nchwcBlock
	p, nw := &r.p, r.nw
	geo := p.geo
	P := geo.outSize()
	fbg := min(nw.fb, r.mb-grp*nw.fb)
	taps := geo.kSize()
	var w []float32
	if r.nw.depthwise { // block grp of the input, its own weights
		w = nw.w[grp*taps*B:][:taps*B]
	} else {
		w = nw.w[grp*nw.fb*r.cb*taps*r.bi*B:][:fbg*r.cb*taps*r.bi*B]
	}
	bias := r.bias[grp*nw.fb*B:][:fbg*B]
	// Narrow rows (under nchwcChunkRow outputs: a kernel call or two a
	// row) take the task's rows in passes whose sums stay in L2
	// (nchwcPassBytes), and in a pass the input blocks in chunks whose
	// weights stay in L1 (nchwcChunkBytes), each chunk over every position
	// of the pass before the next: the weights are read from L2 once a
	// chunk and pass, not once a call. Measured on ResNet-50 at one thread
	// (AVX-512, alternate runs of one process): its 512-channel 3x3 layers
	// at 7x7 2.36 -> 2.14 ms at batch 1, 20.5 -> 17.9 at batch 8; on rows
	// of 14 and more the chunks gained nothing (ResNet-50's other layers and
	// the test ResNet's, within 2%), and each row is then one pass of every
	// block.
	rowBytes := fbg * B * r.len * 4
	rp := max(1, min(row1-row0, nchwcPassBytes/rowBytes))
	cc := r.cb // input blocks a chunk
	if !r.nw.depthwise {
		cc = nchwcChunkBlocks(r.cb, r.len, taps, r.bi, fbg, nw.fb)
	}
	if r.len >= nchwcChunkRow {
		rp = 1
	}
	// The sums land in a scratch of the pass's rows, blocked, or, for a
	// blocked Y, in Y itself (its blocks P positions of 16 apart).
	var sums []float32
	var buf *[]float32
	ldy := rp * r.len * B // floats a block of the sums
	if r.band != nil {
		ldy, sums = r.bandLd, r.band
	} else if p.layout.y {
		ldy = P * B
		sums = r.y[(img*r.mb+grp*nw.fb)*P*B:]
	} else {
		buf = nchwcScratch.Get().(*[]float32)
		*buf = grow(*buf, fbg*ldy)
		sums = *buf
	}
	xs, rowStep, colStep := geo.stride[2]*r.bi, geo.dil[1]*r.wp*r.bi, geo.dil[2]*r.bi
	maxNP := nchwcMaxPositions(fbg)
	if r.nw.depthwise {
		maxNP = nchwcDwMaxPositions()
	}
	// A blocked Y's activation, where the kernels take it (Relu, Clip,
	// HardSwish on AVX-512: epilogue.act), is applied by them as they store
	// the last sums, after the residual: no pass over Y after. A depthwise
	// kernel adds no residual, nor does a dense one that applies HardSwish:
	// with a residual, their epilogue adds it, then applies the activation.
	// Measured at one thread (fastest of 40 runs a step, alternating
	// binaries, two pairs): the clamps, ResNet-50 at batch 8 its stem 13.4
	// -> 12.3 ms and its residual 64->256 layers 21.9 -> 20.5, the rest
	// within 2% either way (445.5 -> 444.7 in all); the test ResNet at
	// batch 64 its stem 3.82 -> 3.55, in all 30.1 -> 29.6; the test
	// MobileNetV2 (Clip) 11.97 -> 11.93, with its depthwise layers clamped
	// too 11.72 -> 11.59 (those layers 0.95 to 0.99 of their time);
	// HardSwish, mobilenet_v3_small at batch 32 59.7 -> 54.5 ms in all, its
	// HardSwish layers 0.78 to 0.89 of their time.
	epAct, epIn := r.act, r.actIn
	kernelAct := epIn && (p.z == nil || !r.nw.depthwise && !epAct.swish)
	// Y written over Z (r.over) where the kernels do not read Z as they
	// store the last sums (input blocks in chunks: the first chunk's sums
	// land on Z; an epilogue that adds it after the kernels), which
	// nchwcConv.Overwrites refuses but a plan made with other chunks may
	// hold: the pass's Z is copied aside first, and the epilogue adds it
	// after the pass.
	var stash *[]float32
	if r.over && (cc < r.cb || r.nw.depthwise || epAct.swish) {
		stash = nchwcScratch.Get().(*[]float32)
		*stash = grow(*stash, fbg*rp*r.len*B)
		kernelAct = false
	}
	co0 := grp * nw.fb * B
	chans := min(fbg*B, p.m-co0)
	var next nextWeights
	if gw := nw.fb * r.cb * taps * r.bi * B; r.prefetch && !r.nw.depthwise && grp+1 < r.groups && 4*gw <= nchwcPrefetchBytes {
		calls := (row1 - row0) * ((r.cb + cc - 1) / cc) * ((r.len + maxNP - 1) / maxNP)
		next.start(nw.w[(grp+1)*gw:][:min(gw, len(nw.w)-(grp+1)*gw)], calls)
	}
	for pass := row0; pass < row1; pass += rp {
		pe := min(row1, pass+rp)
		pq0, pq1 := pass*r.len, min(P, pe*r.len)
		if stash != nil {
			for f := range fbg {
				copy((*stash)[f*(pq1-pq0)*B:(f+1)*(pq1-pq0)*B], p.z[(img*r.mb+grp*nw.fb+f)*P*B:][pq0*B:pq1*B])
			}
		}
		for c0 := 0; c0 < r.cb; c0 += cc {
			cbs := min(cc, r.cb-c0)
			wc := w[c0*taps*r.bi*fbg*B:]
			if c0+cc < r.cb { // the next chunk's weights, a few lines a call of this one
				cw := taps * r.bi * fbg * B
				next.start(w[(c0+cc)*cw:][:min(cc, r.cb-c0-cc)*cw], (pe-pass)*((r.len+maxNP-1)/maxNP))
			}
			for row := pass; row < pe; row++ {
				n := min(r.len, P-row*r.len)
				xrow := x[c0*r.plane+row*r.rowX:]
				sr := sums[(row-pass)*r.len*B:]
				if p.layout.y {
					sr = sums[(row-r.bandRow0)*r.len*B:]
				}
				// The residual of a blocked Y with a blocked Z, added by the
				// kernels as they store the row's last sums (z laid out as
				// the sums): read while the sums are made, not in a pass
				// after. Measured at one thread (fastest of 40 runs a step,
				// alternating binaries, three pairs): ResNet-50 at batch 8,
				// its 1x1 layers that add the residual 64->256 26.5, 25.7
				// -> 24.4, 25.1 ms and 128->512 26.4, 26.1 -> 24.2, 24.5;
				// the test ResNet at batch 64, its 16-channel ones 5.34 ->
				// 5.02.
				var zr []float32
				last := p.layout.y && c0+cbs == r.cb
				zIn := last && p.z != nil && !r.nw.depthwise && !epAct.swish && stash == nil
				if zIn {
					zr = p.z[(img*r.mb+grp*nw.fb)*P*B+row*r.len*B:]
				}
				act := &nchwcNoAct
				if last && kernelAct {
					act = &r.act
				}
				// Calls of nearly equal positions: 13 as 7 and 6, not 12 and 1.
				calls := (n + maxNP - 1) / maxNP
				for c, o := 0, 0; c < calls; c++ {
					np := n / calls
					if c < n%calls {
						np++
					}
					if r.nw.depthwise {
						nchwcDwTile(sr[o*B:], xrow[o*xs:], xs, geo.k[1], geo.k[2], rowStep, colStep, w, bias, np, act)
					} else {
						var zo []float32
						if zIn {
							zo = zr[o*B:]
						}
						next.call()
						nchwcTile(sr[o*B:], ldy, xrow[o*xs:], xs, r.plane, cbs, geo.k[1], geo.k[2], rowStep, colStep, wc, bias, fbg, np, c0 > 0, r.bi, zo, act)
					}
					o += np
				}
			}
		}
		if stash != nil { // Y over Z: the epilogue with the pass's Z copied aside
			for f := range fbg {
				p.ep.apply(sums[f*ldy:][pq0*B:pq1*B], (*stash)[f*(pq1-pq0)*B:(f+1)*(pq1-pq0)*B])
			}
		}
		if p.layout.y {
			continue
		}
		if p.layout.nhwc { // the epilogue on the blocked sums, then each position's channels (16 floats a block) in place
			for f := 0; p.ep != nil && f < fbg; f++ {
				p.ep.apply(sums[f*ldy:][:(pq1-pq0)*B], nil)
			}
			for q := pq0; q < pq1; q++ {
				yq := r.y[(img*P+q)*p.m+co0:][:chans]
				for f := 0; f*B < chans; f++ {
					copy(yq[f*B:min(chans, (f+1)*B)], sums[f*ldy+(q-pq0)*B:])
				}
			}
			continue
		}
		if p.layout.z && p.ep != nil { // a blocked residual: the epilogue on the blocked sums
			for f := range fbg {
				z := p.z[(img*r.mb+grp*nw.fb+f)*P*B:][pq0*B : pq1*B]
				p.ep.apply(sums[f*ldy:][:(pq1-pq0)*B], z)
			}
		}
		// The pass's blocks into the output planes: its rows are one run
		// of positions in both.
		yq := r.y[(img*p.m+co0)*P+pq0:]
		for f := range (chans + B - 1) / B {
			unblock(yq[f*B*P:], P, sums[f*ldy:], pq1-pq0, min(B, chans-f*B))
		}
	}
	q0, q1 := row0*r.len, min(P, row1*r.len)
	if !p.layout.y {
		nchwcScratch.Put(buf)
		if !p.layout.z && !p.layout.nhwc {
			p.finish(r.y, (img*p.m+co0)*P+q0, chans, q1-q0, P)
		}
		return
	}
	if stash != nil {
		nchwcScratch.Put(stash)
	}
	if p.ep == nil {
		return // the channels past M are 0: their bias and weights are
	}
	bq := r.bandRow0 * r.len // the first position of sums (a band's)
	for f := range fbg {
		blk := sums[f*ldy:]
		if !kernelAct && stash == nil { // else the kernels applied it (last), or it was applied a pass at a time
			var z []float32
			if p.z != nil && (r.nw.depthwise || epAct.swish) { // else the dense kernels added it (zIn)
				z = p.z[(img*r.mb+grp*nw.fb+f)*P*B:][q0*B : q1*B]
			}
			p.ep.apply(blk[(q0-bq)*B:(q1-bq)*B], z)
		}
		if lanes := chans - f*B; lanes < B { // the channels past M back to 0 (Sigmoid(0) is not)
			for q := q0 - bq; q < q1-bq; q++ {
				clear(blk[q*B+lanes : (q+1)*B])
			}
		}
	}
}

// nchwcPoolBandBytes bounds a band of a pooled convolution's rows
// (pooledRows): with the image's padded copy and the group's weights, in
// L2. A variable for the tests.
var nchwcPoolBandBytes = 256 << 10

// pooledRows computes rows row0 to row1 of the pooled output of group grp
// of image img (the convolution's output pooled: convLayout.pool), from
// x, the image's padded copy: in bands of output rows, the convolution's
// rows that their windows read computed by compute into a band of the
// task's own (nchwcPoolBandBytes at most), then pooled from it, in cache.
// The rows that the next band's windows read too are moved to its start,
// not computed again (windows of 3 rows, stride 2: one row a band).
func (r *nchwcRun) pooledRows(img, grp, row0, row1 int, x []float32) {
	const B = nchwcBlock
	if row1 <= row0 {
		return
	}
	pg, h := &r.p.pool, r.p.geo.out[1]
	fbg := min(r.nw.fb, r.mb-grp*r.nw.fb)
	rowF := r.len * B // a block's row
	span := (pg.k[1]-1)*pg.dil[1] + 1
	per := max(1, (nchwcPoolBandBytes/(4*fbg*rowF)-span)/pg.stride[1]+1) // output rows a band at most
	bands := (row1 - row0 + per - 1) / per
	per = (row1 - row0 + bands - 1) / bands // as even as they go
	bandRows := min(h, (per-1)*pg.stride[1]+span)
	buf := nchwcScratch.Get().(*[]float32)
	*buf = grow(*buf, fbg*bandRows*rowF)
	b := nchwcBandRuns.Get().(*nchwcRun) // the task's copy of the run: its band
	*b = *r
	b.band, b.bandLd = *buf, bandRows*rowF
	mp := maxPoolBlockedRun{g: *pg, c: r.p.m, vector: blockWidth != 0}
	have0, have1 := 0, 0 // the band's rows: the convolution's [have0, have1)
	for a := row0; a < row1; a += per {
		e := min(row1, a+per)
		lo, hi := h, 0 // the rows that output rows [a, e) read
		for oh := a; oh < e; oh++ {
			h0 := oh*pg.stride[1] - pg.padLo[1]
			if tlo, thi := windowRange(h0, pg.k[1], pg.dil[1], h); tlo < thi {
				lo, hi = min(lo, h0+tlo*pg.dil[1]), max(hi, h0+(thi-1)*pg.dil[1]+1)
			}
		}
		if lo < hi {
			from := lo
			if have0 <= lo && lo < have1 { // the rows the band before computed: moved to the start
				for f := range fbg {
					blk := b.band[f*b.bandLd:]
					copy(blk, blk[(lo-have0)*rowF:(have1-have0)*rowF])
				}
				from = have1
			}
			b.bandRow0 = lo
			if from < hi {
				b.compute(img, grp, from, hi, x)
			}
			have0, have1 = lo, hi
		}
		for f := range fbg {
			blk := grp*r.nw.fb + f
			y := r.y[(img*r.mb+blk)*pg.outSize()*B:][:pg.outSize()*B]
			mp.rows(b.band[f*b.bandLd:][:b.bandLd], lo, y, a, e, min(B, r.p.m-blk*B))
		}
	}
	*b = nchwcRun{} // holding none of the run's
	nchwcBandRuns.Put(b)
	nchwcScratch.Put(buf)
}

// nchwcBandRuns are pooledRows's copies of a run (not on the stack:
// compute's receiver escapes).
var nchwcBandRuns = sync.Pool{New: func() any { return new(nchwcRun) }}

// dwRows is compute for a depthwise convolution whose output stays in the
// blocks, with no residual (dwLean), from xg, block grp's padded copy: a
// call of the kernel for every run of up to nchwcDwMaxPositions of a row,
// the activation applied by the kernels or, where they cannot (SiLU,
// GELU), by the epilogue a row at a time while the row is in cache, and
// nothing else. compute's setup for the general case, once per image and
// block, outweighed the kernels on the small planes of a network's last
// layers. With packBlock's padding of narrow rows in one clear, measured at
// one thread (fastest of 40 runs a step, alternating binaries, two pairs),
// the test MobileNetV2 at batch 64, its depthwise layers of 240 channels on
// 2 x 2 images 0.41 -> 0.30 ms (the three), 96 on 4 x 4 0.41 -> 0.32
// (four), 144 on 4 x 4 0.40 -> 0.31 (three); at two threads 0.26 -> 0.22,
// 0.28 -> 0.24, 0.27 -> 0.24. The epilogue a row at a time: efficientnet_b0
// at batch 8, its depthwise layers with SiLU 1-6% faster (one thread).
func (r *nchwcRun) dwRows(img, grp, row0, row1 int, xg []float32) {
	const B = nchwcBlock
	g := r.p.geo
	taps, ow := g.kSize(), g.out[2]
	w := r.nw.w[grp*taps*B:][:taps*B]
	bias := r.bias[grp*B:][:B]
	y := r.y[(img*r.mb+grp)*g.outSize()*B:]
	xs, rowStep, colStep := g.stride[2]*B, g.dil[1]*r.wp*B, g.dil[2]*B
	maxNP := nchwcDwMaxPositions()
	calls := (ow + maxNP - 1) / maxNP // of nearly equal positions, as compute's
	act := &r.act
	if !r.actIn {
		act = &nchwcNoAct
	}
	for row := row0; row < row1; row++ {
		xrow, yrow := xg[row*r.rowX:], y[row*ow*B:]
		for c, o := 0, 0; c < calls; c++ {
			np := ow / calls
			if c < ow%calls {
				np++
			}
			nchwcDwTile(yrow[o*B:], xrow[o*xs:], xs, g.k[1], g.k[2], rowStep, colStep, w, bias, np, act)
			o += np
		}
		if !r.actIn {
			r.p.ep.apply(yrow[:ow*B], nil)
		}
	}
}

// nchwcChunkRow is the narrowest row of outputs taken whole, every input
// block in one kernel call.
const nchwcChunkRow = 12

// nchwcRowOf is the positions of a row of the blocked kernel's tasks: an
// output row, or, pointwise (its output not pooled), up to nchwcRowLen
// positions of the image.
func nchwcRowOf(p convProblem) int {
	if p.pointwise() && p.layout.pool == nil {
		return min(p.geo.outSize(), nchwcRowLen)
	}
	return p.geo.out[2]
}

// nchwcChunkBlocks is the input blocks (of cb) that a dense kernel call
// takes for fbg blocks of outputs (of groups of fb) on rows of rowLen
// positions, taps taps and bi channels an input block: every one on rows
// of nchwcChunkRow and more and where the groups are nchwcGroupBlocksOf's
// fewer blocks (a row a call), else as many as keep their weights within
// nchwcChunkBytes.
func nchwcChunkBlocks(cb, rowLen, taps, bi, fbg, fb int) int {
	if rowLen >= nchwcChunkRow || fb < nchwcGroupBlocks(nchwcWidth) {
		return cb
	}
	return max(1, min(cb, nchwcChunkBytes/(taps*bi*fbg*nchwcBlock*4)))
}

// nchwcPassBytes bounds a pass's sums (bytes), nchwcChunkBytes a chunk's
// weights: within the L2 and L1 of the cores (2 MiB and 48 KiB on Intel's
// Sapphire Rapids; AMD's Zen 2 to 4 have 512 KiB to 1 MiB and 32 KiB).
// Variables for the tests.
var (
	nchwcPassBytes  = 256 << 10
	nchwcChunkBytes = 32 << 10
)

// nchwcDwTile computes np output positions of a block of 16 channels of a
// depthwise convolution (strides in floats): y[j*16 + o] = bias[o] + the
// sum over taps (a < kh, c < kw) of w[(a*kw+c)*16 + o] * x[a*rowStep +
// c*colStep + j*xs + o], in that order, then activated by act as
// nchwcTile activates (act.swish: AVX-512 only).
func nchwcDwTile(y, x []float32, xs, kh, kw, rowStep, colStep int, w, bias []float32, np int, act *nchwcAct) {
	const B = nchwcBlock
	if act.swish && nchwcWidth == 8 {
		panic("onnx: nchwcDwTile's HardSwish on AVX2")
	}
	if np < 1 || np > nchwcDwMaxPositions() || kh < 1 || kw < 1 {
		panic("onnx: nchwcDwTile out of its range")
	}
	_ = y[np*B-1]
	_ = x[(kh-1)*rowStep+(kw-1)*colStep+(np-1)*xs+B-1]
	_ = w[kh*kw*B-1]
	_ = bias[B-1]
	if nchwcDwVector(y, x, xs, kh, kw, rowStep, colStep, w, bias, np, act) {
		return
	}
	nchwcDwTileGo(y, x, xs, kh, kw, rowStep, colStep, w, bias, np, act)
}

// nchwcDwTileGo is nchwcDwTile in plain Go.
func nchwcDwTileGo(y, x []float32, xs, kh, kw, rowStep, colStep int, w, bias []float32, np int, act *nchwcAct) {
	const B = nchwcBlock
	for j := range np {
		s := y[j*B : (j+1)*B]
		copy(s, bias[:B])
		for a := range kh {
			for c := range kw {
				wt := w[(a*kw+c)*B : (a*kw+c+1)*B]
				xv := x[a*rowStep+c*colStep+j*xs:][:B]
				for o := range s {
					s[o] += wt[o] * xv[o]
				}
			}
		}
		act.apply(s)
	}
}

// unblock writes n positions of a block of sums (src[i*16 + c]) to the
// planes of its first chans channels (dst[c*ldd + i]): 16 positions at a
// time by transpose16 (the last 16 again, overlapping, where n is not a
// multiple; through a block aside where chans < 16), in plain Go where no
// vector kernel runs or n < 16. Measured at one thread (fastest of 40 runs
// a step, alternating binaries, two pairs): the test MobileNetV2 at
// batch 64, its 48 -> 8 channel layers (half a block out, rows of 16 and 8
// positions, which went a value at a time) on 16 x 16 images 0.44 -> 0.33
// ms and 0.40 -> 0.32 (with the residual), on 8 x 8 0.20 -> 0.15.
func unblock(dst []float32, ldd int, src []float32, n, chans int) {
	const B = nchwcBlock
	i0 := 0
	if n >= B {
		var tmp [B * B]float32
		put := func(i int) bool {
			if chans == B {
				return transpose16(dst[i:], ldd, src[i*B:], B)
			}
			if !transpose16(tmp[:], B, src[i*B:], B) {
				return false
			}
			for c := range chans {
				copy(dst[c*ldd+i:][:B], tmp[c*B:])
			}
			return true
		}
		for ; i0+B <= n && put(i0); i0 += B {
		}
		if i0 < n && i0 > 0 && put(n-B) {
			i0 = n
		}
	}
	for c := 0; i0 < n && c < chans; c++ {
		d, s := dst[c*ldd+i0:c*ldd+n], src[i0*B+c:]
		for i := range d {
			d[i] = s[i*B]
		}
	}
}

// transpose16 writes the transpose of the 16 x 16 block at src (rows lds
// floats apart) to dst (rows ldd apart), and reports whether it did: false
// where no vector kernel runs (the caller's loop then moves the values).
func transpose16(dst []float32, ldd int, src []float32, lds int) bool {
	_ = dst[15*ldd+15]
	_ = src[15*lds+15]
	return transpose16Vector(dst, ldd, src, lds)
}

// nchwcTile computes np output positions of fbg blocks of 16 channels
// (strides in floats): y[f*ldy + j*16 + o] = bias[f*16+o] (acc: y[f*ldy +
// j*16 + o] itself) + the sum over
// blocks b < cbs, taps (a < kh, c < kw) and channels i < 16 of
// w[(((b*kh+a)*kw+c)*16+i)*fbg*16 + f*16 + o] *
// x[b*cbStride + a*rowStep + c*colStep + j*xs + i], in that order, then,
// where z is not nil, + z[f*ldy + j*16 + o] (a residual, laid out as y),
// then activated by act (nchwcAct: the fused Relu, Clip or HardSwish, or
// none; HardSwish on AVX-512 only, and with no z).
func nchwcTile(y []float32, ldy int, x []float32, xs, cbStride, cbs, kh, kw, rowStep, colStep int, w, bias []float32, fbg, np int, acc bool, bi int, z []float32, act *nchwcAct) {
	const B = nchwcBlock
	if act.swish && (z != nil || nchwcWidth == 8) {
		panic("onnx: nchwcTile's HardSwish with a residual or on AVX2")
	}
	if fbg < 1 || fbg > 4 || np < 1 || np > nchwcMaxPositions(fbg) || cbs < 1 || kh < 1 || kw < 1 || bi != 1 && bi != B {
		panic("onnx: nchwcTile out of its range")
	}
	_ = y[(fbg-1)*ldy+np*B-1]
	_ = x[(cbs-1)*cbStride+(kh-1)*rowStep+(kw-1)*colStep+(np-1)*xs+bi-1]
	_ = w[cbs*kh*kw*bi*fbg*B-1]
	_ = bias[fbg*B-1]
	if z != nil {
		_ = z[(fbg-1)*ldy+np*B-1]
	}
	if !nchwcVector(y, ldy, x, xs, cbStride, cbs, kh, kw, rowStep, colStep, w, bias, fbg, np, acc, bi, z, act) {
		nchwcTileGo(y, ldy, x, xs, cbStride, cbs, kh, kw, rowStep, colStep, w, bias, fbg, np, acc, bi, z, act)
	}
}

// nchwcTileGo is nchwcTile in plain Go.
func nchwcTileGo(y []float32, ldy int, x []float32, xs, cbStride, cbs, kh, kw, rowStep, colStep int, w, bias []float32, fbg, np int, accumulate bool, bi int, z []float32, act *nchwcAct) {
	const B = nchwcBlock
	var acc [nchwcSums * B]float32
	if fbg > 4 || fbg*np > nchwcSums {
		panic("onnx: nchwcTileGo of more than 4 blocks or 24 sums")
	}
	for f := range fbg {
		for j := range np {
			from := bias[f*B : (f+1)*B]
			if accumulate {
				from = y[f*ldy+j*B : f*ldy+(j+1)*B]
			}
			copy(acc[(f*np+j)*B:(f*np+j+1)*B], from)
		}
	}
	wi := 0
	for b := range cbs {
		for a := range kh {
			for c := range kw {
				xb := b*cbStride + a*rowStep + c*colStep
				for i := range bi {
					wv := w[wi : wi+fbg*B]
					wi += fbg * B
					for j := range np {
						v := x[xb+j*xs+i]
						for f := range fbg {
							s := acc[(f*np+j)*B : (f*np+j+1)*B]
							for o, wo := range wv[f*B : (f+1)*B] {
								s[o] += v * wo
							}
						}
					}
				}
			}
		}
	}
	for f := range fbg {
		for j := range np {
			a := acc[(f*np+j)*B : (f*np+j+1)*B]
			if z != nil {
				for o, v := range z[f*ldy+j*B : f*ldy+(j+1)*B] {
					a[o] += v
				}
			}
			act.apply(a)
			copy(y[f*ldy+j*B:f*ldy+(j+1)*B], a)
		}
	}
}
