package onnx

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Conv (opsets 1, 11): N-dimensional convolution (1 to 3 spatial axes) with
// groups, strides, dilations, pads or auto_pad, kernel_shape given or taken
// from W. The two versions compute the same; 11 only words auto_pad's
// output size precisely.
//
// Float32 convolutions are matrix products on package gemm, one for each
// image, group and chunk of output positions, chunks sized to keep the
// patches in L2 and to give every core tasks (each product runs on one
// goroutine: measured faster than one all-core product per image, which
// repacks and waits more). The patches (im2col: K = channels x kernel taps
// rows, one column per position) are none for a 1x1 kernel with stride 1
// and no padding, whose input is already that matrix. The product takes
// one of two forms (convByRows): for thick patches, patches^T x W with W
// packed once per node (gemm.Pack; W is a constant), the result transposed
// into the output's planes with the bias added; for thin ones (the RGB
// stems, 1x1 convolutions of few channels), W x patches written straight
// into the planes, W packed once per node as well (gemm.PackA) where it is
// a constant, no transpose.
// Convolutions of few channels (at most 64 per group) with stride 1 or 2,
// where AVX-512 or AVX2 runs and there are images enough for every core, take a
// direct kernel instead, with no patches at all (ops_conv_flat.go); the
// other convolutions of one group and 16 channels or more, where a vector
// kernel runs, a direct kernel in blocks of 16 channels (NCHWc, as ONNX
// Runtime's MLAS, ops_conv_nchwc.go), with no patches either.
// Grouped convolutions with one input channel per group (depthwise,
// MobileNet's) take a direct kernel (ops_conv_depthwise.go); float64 ones a
// plain loop.

func init() {
	RegisterOp(OpDef{Name: "Conv", Versions: []int{1, 11}, New: newConv})
}

type conv struct {
	win   window
	group int
	// constW is set when W is known before the run (an initializer): its
	// packing is then kept in packed.
	constW atomic.Bool
	packed atomic.Pointer[convWeights]
	rows   atomic.Pointer[convRowWeights]
	flat   atomic.Pointer[flatWeights]
	nchwc  atomic.Pointer[nchwcWeights]
	// nchwc3 is W packed in groups of 3 output blocks (nchwcGroupBlocksOf),
	// kept beside nchwc: a model run at batch 1 and at larger batches
	// takes both, and would pack W anew at each change. Such a model then
	// holds both packings of those layers: ResNet-50's three 3x3 layers of
	// 512 channels on 7 x 7 outputs, 28 MB more. Taking groups of 3 at
	// batch 1 too (chunked, as four blocks are there) cost nothing at one
	// thread but left two cores 11 tasks a layer, the 3x3 layers 8% slower
	// (2.19 -> 2.36 ms).
	nchwc3 atomic.Pointer[nchwcWeights]
	// wino is W transformed for Winograd's F(2x2, 3x3) (useWinograd),
	// kept beside nchwc as nchwc3 is: a model run at batches whose tiles
	// are under winoMinTiles and at larger ones holds both (ResNet-50's
	// 512-channel 3x3 layers at batch 1 and 8: 9.4 MB a layer packed, 16.8
	// MB transformed).
	wino atomic.Pointer[winoWeights]
}

// convRowWeights are a constant W packed as the A operand of W x patches
// (convGemmRows), one matrix per group (the group's Cout/group x K rows),
// and the W they were packed from.
type convRowWeights struct {
	src    *byte
	groups []*gemm.PackedA
}

// convWeights are W packed for gemm, one matrix per group (op(B) = the
// group's weights transposed, K x Cout/group), and the W they were packed
// from.
type convWeights struct {
	src    *byte
	groups []*gemm.Packed
}

func newConv(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	c := &conv{win: readWindow(a, false, true, false)}
	g := a.Int("group", 1)
	if g < 1 || g > 1<<31 {
		a.Fail("attribute group is %d, want at least 1", g)
	}
	c.group = int(g)
	return c, a.Err()
}

// convShapes checks the shapes of X, W and B and returns the geometry.
func (c *conv) shapes(x, w []int, b []int, hasB bool) (geometry, error) {
	n, ch, sp, err := spatial(x, "X")
	_ = n
	if err != nil {
		return geometry{}, err
	}
	if len(w) != len(x) {
		return geometry{}, fmt.Errorf("input W has shape %s, X %s: want W of rank %d (M x C/group x kernel)", nd.ShapeString(w), nd.ShapeString(x), len(x))
	}
	m, cg := w[0], w[1]
	if cg*c.group != ch {
		return geometry{}, fmt.Errorf("input X has %d channels, W takes %d per group x %d groups = %d (W %s)", ch, cg, c.group, cg*c.group, nd.ShapeString(w))
	}
	if m%c.group != 0 {
		return geometry{}, fmt.Errorf("input W has %d output channels, not a multiple of group %d", m, c.group)
	}
	kernel := w[2:]
	for _, k := range kernel {
		if k < 1 {
			return geometry{}, fmt.Errorf("input W has shape %s: kernel sizes must be at least 1", nd.ShapeString(w))
		}
	}
	if c.win.kernel != nil && !nd.SameShape(c.win.kernel, kernel) {
		return geometry{}, fmt.Errorf("attribute kernel_shape %v disagrees with W's shape %s", c.win.kernel, nd.ShapeString(w))
	}
	if hasB && (len(b) != 1 || b[0] != m) {
		return geometry{}, fmt.Errorf("input B has shape %s, want [%d] (W's output channels)", nd.ShapeString(b), m)
	}
	return c.win.geometry(sp, kernel)
}

func (c *conv) Infer(in []Meta) ([]Meta, error) {
	x, w, b := in[0], in[1], metaAt(in, 2)
	if x.Type != nd.Float32 && x.Type != nd.Float64 {
		return nil, fmt.Errorf("input X is %v: Conv takes float32 or float64 (float16 computes as float32)", x.Type)
	}
	if w.Type != x.Type || (b.Type != nd.Undefined && b.Type != x.Type) {
		return nil, sameTypeErr([]string{"X", "W", "B"}, x, w, b)
	}
	geo, err := c.shapes(x.Shape, w.Shape, b.Shape, b.Type != nd.Undefined)
	if err != nil {
		return nil, err
	}
	if w.Value != nil {
		c.constW.Store(true)
	}
	return []Meta{{Type: x.Type, Shape: geo.outShape(x.Shape[0], w.Shape[0])}}, nil
}

func (c *conv) Run(in, out []nd.Array) error { return c.run(in, out, nil, nil) }

// rawFloats is a's data as float32s, all of it: a blocked value's data is
// longer than its NCHW shape (blockedSize).
func rawFloats(a nd.Array) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(a.Data))), len(a.Data)/4)
}

// run computes the convolution of in (X, W, B) into out, each output value
// then through ep (nil: none) with z its residual (nil: none; float32,
// Y's shape), in the task that wrote it, while it is in cache.
func (c *conv) run(in, out []nd.Array, ep *epilogue, z []float32) error {
	return c.runIn(in, out, ep, z, convLayout{})
}

// runIn is run with X, Y and z in the layouts the plan chose
// (plan_layout.go): a layout other than NCHW's is the plan's for a float32
// convolution that the blocked kernel computes (nchwcCan), and runs on it.
func (c *conv) runIn(in, out []nd.Array, ep *epilogue, z []float32, layout convLayout) error {
	x, w, b, y := in[0], in[1], arrayAt(in, 2), out[0]
	geo, err := c.shapes(x.Shape, w.Shape, b.Shape, b.Type != nd.Undefined)
	if err != nil {
		return err
	}
	p := convProblem{geo: geo, n: x.Shape[0], c: x.Shape[1], m: w.Shape[0], group: c.group, ep: ep, z: z, layout: layout}
	if layout != (convLayout{}) {
		if x.Type != nd.Float32 || w.Type != nd.Float32 || p.c == 0 {
			return fmt.Errorf("onnx: a blocked layout for a %v Conv of %d channels", x.Type, p.c)
		}
		if layout.pool != nil {
			// The output's shape on the stack (geo.outShape's append allocates, every run).
			if p.pool, err = layout.pool.geometry([]int{p.n, p.m, geo.out[1], geo.out[2]}); err != nil {
				return err
			}
			if !layout.y || layout.nhwc || z != nil || p.group != 1 || geo.k[0] != 1 || p.pool.k[0] != 1 {
				return fmt.Errorf("onnx: a MaxPool taken into a Conv of %d groups (Y blocked %v, residual %v)", p.group, layout.y, z != nil)
			}
		}
		c.blocked(p, rawFloats(x), nd.MustAs[float32](w), asOr[float32](b), rawFloats(y))
		return nil
	}
	if x.Type == nd.Float64 {
		convDirect(p, nd.MustAs[float64](x), nd.MustAs[float64](w), asOr[float64](b), nd.MustAs[float64](y))
		return nil
	}
	xs, ws, ys := nd.MustAs[float32](x), nd.MustAs[float32](w), nd.MustAs[float32](y)
	bs := asOr[float32](b)
	switch {
	case p.c == 0 || len(ys) == 0: // no input channels: the bias alone
		convBiasOnly(ys, bs, p.m, geo.outSize())
		ep.applyAll(ys, z)
	case useNCHWcDepthwise(p), useNCHWcIn1(p), nchwcForce && nchwcCan(p):
		c.blocked(p, xs, ws, bs, ys)
	case pixelsConv(p):
		convPixels(p, xs, c.weights(w, p)[0], bs, ys)
	case p.c/p.group == 1 && p.group > 1:
		convDepthwise(p, xs, ws, bs, ys)
	case useFlat(p):
		convFlat(p, xs, c.flatWeightsOf(ws, p), bs, ys)
	case useNCHWc(p):
		c.blocked(p, xs, ws, bs, ys)
	case convByRows(p):
		convGemmRows(p, xs, ws, c.rowWeights(w, p), bs, ys)
	default:
		convGemm(p, xs, c.weights(w, p), bs, ys)
	}
	return nil
}

// pixelsConv reports whether p's images are each one pixel in and out, a
// 1x1 kernel of one group: squeeze-and-excitation's convolutions, which
// convPixels computes.
func pixelsConv(p convProblem) bool {
	g := p.geo
	return p.group == 1 && g.kSize() == 1 && g.inSize() == 1 && g.outSize() == 1
}

// convPixels computes a convolution of one-pixel images (pixelsConv) as
// one product of the batch's rows: Y (N x M) = X (N x C) times W's
// transpose (packed once, as convGemm's), plus the bias, then the
// epilogue. A product an image (or the blocked kernel's, an image a task)
// read all of W again for each, and packed and unpacked a pixel's blocks
// around it: efficientnet_b0 at batch 8, one thread, its
// squeeze-and-excitation convolutions of 1152 and 48 channels 46 and 55
// -> 8.2 and 7.2 µs (the two alone, in a loop), the model 64.1 -> 63.4 ms
// (fastest of 60 runs, alternating builds; 2-core Zen 5 VM).
func convPixels(p convProblem, x []float32, w *gemm.Packed, bias, y []float32) {
	beta := float32(0)
	if bias != nil {
		for i := range p.n {
			copy(y[i*p.m:(i+1)*p.m], bias)
		}
		beta = 1
	}
	gemm.SgemmPacked(0, false, p.n, 1, x, p.c, w, 0, p.m, beta, y, p.m)
	p.ep.applyAll(y[:p.n*p.m], p.z)
}

// blocked computes p by the blocked kernel (convNCHWc), W packed for it:
// depthwise (one channel a group) or not.
func (c *conv) blocked(p convProblem, x, w, bias, y []float32) {
	if p.c == p.group && p.m == p.group && p.group > 1 {
		convNCHWc(p, x, c.nchwcDwWeightsOf(w, p), bias, y)
		return
	}
	if useWinograd(p) {
		convWinograd(p, x, c.winoWeightsOf(w, p), bias, y)
		return
	}
	convNCHWc(p, x, c.nchwcWeightsOf(w, p), bias, y)
}

// convBiasOnly writes each output plane (m of them per image, size
// values) as its bias, or 0.
func convBiasOnly(y, bias []float32, m, size int) {
	for i := range y {
		if bias != nil {
			y[i] = bias[i/size%m]
		} else {
			y[i] = 0
		}
	}
}

// weights returns W packed per group: kept when W is a constant, else
// packed for this run.
func (c *conv) weights(w nd.Array, p convProblem) []*gemm.Packed {
	src := unsafe.SliceData(w.Data)
	if pk := c.packed.Load(); pk != nil && pk.src == src {
		return pk.groups
	}
	ws := nd.MustAs[float32](w)
	mg, k := p.m/p.group, p.c/p.group*p.geo.kSize()
	pk := &convWeights{src: src, groups: make([]*gemm.Packed, p.group)}
	for g := range pk.groups {
		// op(B)[kk][co] = W[g*mg+co][kk]: W's rows transposed.
		pk.groups[g] = gemm.Pack(true, k, mg, ws[g*mg*k:], k)
	}
	if c.constW.Load() {
		c.packed.Store(pk)
	}
	return pk.groups
}

// rowWeights returns a constant W packed per group as the A operand of
// convGemmRows, packed on first use and kept (weights prepared once per
// model, not once per product); nil where W is not a constant, whose
// products then pack it as they go.
func (c *conv) rowWeights(w nd.Array, p convProblem) []*gemm.PackedA {
	if !c.constW.Load() {
		return nil
	}
	src := unsafe.SliceData(w.Data)
	if pk := c.rows.Load(); pk != nil && pk.src == src {
		return pk.groups
	}
	ws := nd.MustAs[float32](w)
	mg, k := p.m/p.group, p.c/p.group*p.geo.kSize()
	pk := &convRowWeights{src: src, groups: make([]*gemm.PackedA, p.group)}
	for g := range pk.groups {
		pk.groups[g] = gemm.PackA(false, mg, k, ws[g*mg*k:], k)
	}
	c.rows.Store(pk)
	return pk.groups
}

// convProblem is one Conv's sizes: n images of c channels, m output
// channels, in groups.
type convProblem struct {
	// ep is applied to each output run once written, z its residual (the
	// output's shape); nil: none (a fused Conv's, plan_fuse.go).
	ep *epilogue
	z  []float32

	geo            geometry
	n, c, m, group int

	// layout says which of X, Y and Z are in the plan's blocked layout
	// (plan_layout.go), not NCHW: the blocked kernel's input and output as
	// they are, no copy in or out of them.
	layout convLayout
	// pool is the geometry of layout.pool over the convolution's output
	// (the geometry's out: Y's), where layout.pool is set.
	pool geometry
}

// convLayout says which of a blocked convolution's X, Y and Z (its
// residual) are in the plan's blocked layout (plan_layout.go): the zero
// value, none. nhwc: Y is written N x H x W x C (a Transpose to channels
// last that read it taken in; y false, no residual). pool: Y is this
// MaxPool of the convolution's output (taken in: convPools; y true, no
// residual).
type convLayout struct {
	x, y, z, nhwc bool
	pool          *pool
}

// pointwise reports whether the patches matrix is the input itself: a 1x1
// kernel, stride 1, no padding.
func (p convProblem) pointwise() bool {
	g := p.geo
	return g.kSize() == 1 && g.stride == [3]int{1, 1, 1} && !g.padded()
}

// convChunkFloats is the size of one chunk's patches (floats): 512 KiB,
// which stays in L2 between im2col writing it and gemm packing it.
const convChunkFloats = 128 << 10

// convGemm computes a float32 convolution as packed matrix products.
func convGemm(p convProblem, x []float32, w []*gemm.Packed, bias, y []float32) {
	k := p.c / p.group * p.geo.kSize()
	pc := convChunk(p, k)
	chunks := (p.geo.outSize() + pc - 1) / pc
	parallel.EachWith(p.n*p.group*chunks, 2*pc*k*(p.m/p.group), convGemmRun{p: p, x: x, w: w, bias: bias, y: y, pc: pc, chunks: chunks}, (*convGemmRun).task)
}

// convGemmRun is a run of convGemm (of convGemmRows: w unused, ws W), in
// chunks of pc positions.
type convGemmRun struct {
	p          convProblem
	x, bias, y []float32
	w          []*gemm.Packed
	ws         []float32
	wa         []*gemm.PackedA
	pc, chunks int
}

// task computes chunk t of convGemm.
func (r *convGemmRun) task(t int) {
	p, x, w, bias, y, pc, chunks := &r.p, r.x, r.w, r.bias, r.y, r.pc, r.chunks
	geo := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	k := cg * geo.kSize()
	P, inSize := geo.outSize(), geo.inSize()
	pointwise := p.pointwise()
	buf := getFloats(pc*mg + pcIf(!pointwise, pc*k))
	defer putFloats(buf)
	tmp := (*buf)[:pc*mg]
	img, g, ch := t/(p.group*chunks), t/chunks%p.group, t%chunks
	p0 := ch * pc
	n := min(pc, P-p0)
	xg := x[(img*p.c+g*cg)*inSize:]
	var a []float32
	lda := 0
	if pointwise {
		a, lda = xg[p0:], P
	} else {
		a, lda = (*buf)[pc*mg:pc*mg+n*k], n
		im2col(a, xg, cg, geo, p0, n)
	}
	// tmp (n x mg) = col^T (n x k) * W_g^T (k x mg)
	gemm.SgemmPacked(1, true, n, 1, a, lda, w[g], 0, mg, 0, tmp, mg)
	var b []float32
	if bias != nil {
		b = bias[g*mg : (g+1)*mg]
	}
	transposeInto(y[(img*p.m+g*mg)*P+p0:], P, tmp[:n*mg], n, mg, b)
	p.finish(y, (img*p.m+g*mg)*P+p0, mg, n, P)
}

// convByRows chooses between the two forms of the product. W x patches
// writes the output's planes directly but packed W again for every chunk
// of positions when this was measured (one value moved per chunk-size
// multiply-adds; a constant W is now packed once, rowWeights). Patches^T x W
// uses W packed once but transposes its product into the planes: one value
// moved, strided, per K multiply-adds. Measured on ResNet's and
// MobileNetV2's layers (batch 8, 2 cores), W x patches wins while K is at
// most about 8 chunks and W's group (K x Cout/group) stays in L2 (1 MiB);
// patches^T x W wins on the thick, small layers (ResNet's 256 and 512
// channels, 1x1 convolutions of 960 channels at 7x7) and the wide ones
// (1280 outputs).
func convByRows(p convProblem) bool {
	k := p.c / p.group * p.geo.kSize()
	return k <= 8*convRowsChunk(p, k) && k*(p.m/p.group) <= 1<<18
}

// convRowsChunk is the number of output positions of a product W x
// patches: at least 256, a multiple of 32 (the micro-kernels' widest tile).
func convRowsChunk(p convProblem, k int) int { return convPositions(p, k, 256, 32) }

// convChunk is the number of output positions of a product patches^T x W:
// at least 96, a multiple of 42 (the micro-kernels' 14 and 6 rows).
func convChunk(p convProblem, k int) int { return convPositions(p, k, 96, 42) }

// convPositions is the number of output positions of one task's product of
// K = k: about convChunkFloats of patches, at least least, a multiple of
// tile, and enough tasks for every core, the chunks then evened out.
func convPositions(p convProblem, k, least, tile int) int {
	P := p.geo.outSize()
	pc := max(convChunkFloats/max(k, 1), least)
	workers := runtime.GOMAXPROCS(0)
	if tasks := p.n * p.group; tasks < 2*workers {
		pc = min(pc, (P*tasks+2*workers-1)/(2*workers))
	}
	pc = min(P, max(tile, (pc+tile-1)/tile*tile))
	chunks := (P + pc - 1) / pc
	return min(P, ((P+chunks-1)/chunks+tile-1)/tile*tile)
}

// convGemmRows computes a float32 convolution as products W_g (Cout/group x
// K) x patches (K x positions) into the output's planes.
//
// wa is W packed per group (rowWeights), or nil: W is then packed for
// each product. The bits are the same.
func convGemmRows(p convProblem, x, w []float32, wa []*gemm.PackedA, bias, y []float32) {
	k := p.c / p.group * p.geo.kSize()
	pc := convRowsChunk(p, k)
	chunks := (p.geo.outSize() + pc - 1) / pc
	parallel.EachWith(p.n*p.group*chunks, 2*pc*k*(p.m/p.group), convGemmRun{p: p, x: x, ws: w, wa: wa, bias: bias, y: y, pc: pc, chunks: chunks}, (*convGemmRun).rowsTask)
}

// rowsTask computes chunk t of convGemmRows.
func (r *convGemmRun) rowsTask(t int) {
	p, x, w, bias, y, pc, chunks := &r.p, r.x, r.ws, r.bias, r.y, r.pc, r.chunks
	geo := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	k := cg * geo.kSize()
	P, inSize := geo.outSize(), geo.inSize()
	img, g, ch := t/(p.group*chunks), t/chunks%p.group, t%chunks
	p0 := ch * pc
	n := min(pc, P-p0)
	xg := x[(img*p.c+g*cg)*inSize:]
	yc := y[(img*p.m+g*mg)*P+p0:]
	beta := float32(0)
	if bias != nil {
		beta = 1
		for co := range mg {
			row := yc[co*P : co*P+n]
			fillCopies(row, bias[g*mg+co])
		}
	}
	var b []float32 // the patches: the input itself, or im2col's
	var ldb int
	var buf *[]float32
	if p.pointwise() {
		b, ldb = xg[p0:], P
	} else {
		buf = getFloats(n * k)
		b, ldb = (*buf)[:n*k], n
		im2col(b, xg, cg, geo, p0, n)
	}
	if r.wa != nil {
		gemm.SgemmPackedA(1, r.wa[g], false, n, 1, b, ldb, beta, yc, P)
	} else {
		gemm.SgemmWorkers(1, false, false, mg, n, k, 1, w[g*mg*k:(g+1)*mg*k], k, b, ldb, beta, yc, P)
	}
	if buf != nil {
		putFloats(buf)
	}
	p.finish(y, (img*p.m+g*mg)*P+p0, mg, n, P)
}

func pcIf(c bool, n int) int {
	if c {
		return n
	}
	return 0
}

// transposeInto writes the n x m matrix t (row-major) into the columns of
// dst: dst[j*ld+i] = t[i*m+j] + b[j] (b nil: no bias), in blocks of rows
// that stay in L1.
func transposeInto(dst []float32, ld int, t []float32, n, m int, b []float32) {
	const blk = 16
	for i0 := 0; i0 < n; i0 += blk {
		i1 := min(n, i0+blk)
		for j := range m {
			d := dst[j*ld+i0 : j*ld+i1]
			var bj float32
			if b != nil {
				bj = b[j]
			}
			src := t[i0*m+j:]
			for i := range d {
				d[i] = src[i*m] + bj
			}
		}
	}
}

// im2col writes the patches of output positions p0..p0+n (flat over the
// output's spatial axes) of the cg channels at x into col, k = cg x kernel
// rows of n values: col[(c, kd, kh, kw)][p] is the input under kernel tap
// (kd, kh, kw) of channel c at position p0+p, 0 in the padding.
//
// The positions are cut once into runs along the output's last axis (one
// output row (d, h) each), the same for every row of col.
func im2col(col, x []float32, cg int, g geometry, p0, n int) {
	oh, ow := g.out[1], g.out[2]
	in0, in1, in2 := g.in[0], g.in[1], g.in[2]
	type run struct{ at, d, h, w0, cnt int }
	var stack [64]run
	runs := stack[:0]
	for p := p0; p < p0+n; {
		r, w0 := p/ow, p%ow
		cnt := min(ow-w0, p0+n-p)
		runs = append(runs, run{at: p - p0, d: r / oh, h: r % oh, w0: w0, cnt: cnt})
		p += cnt
	}
	s := g.stride[2]
	row := 0
	for c := range cg {
		xc := x[c*g.inSize():]
		for kd := range g.k[0] {
			for kh := range g.k[1] {
				for kw := range g.k[2] {
					dst := col[row*n : (row+1)*n]
					row++
					offD, offH, offW := kd*g.dil[0]-g.padLo[0], kh*g.dil[1]-g.padLo[1], kw*g.dil[2]-g.padLo[2]
					for _, ru := range runs {
						out := dst[ru.at : ru.at+ru.cnt]
						id, ih := ru.d*g.stride[0]+offD, ru.h*g.stride[1]+offH
						if id < 0 || id >= in0 || ih < 0 || ih >= in1 {
							clear(out)
							continue
						}
						src := xc[(id*in1+ih)*in2:][:in2]
						cnt := ru.cnt
						iw := ru.w0*s + offW
						// Positions whose iw falls left of the input, inside,
						// right of it.
						lo := 0
						if iw < 0 {
							lo = min(cnt, (-iw+s-1)/s)
						}
						hi := cnt
						if last := iw + (cnt-1)*s; last >= in2 {
							hi = max(lo, cnt-((last-in2)/s+1))
						}
						clear(out[:lo])
						clear(out[hi:])
						if hi > lo {
							if s == 1 {
								copy(out[lo:hi], src[iw+lo:])
							} else {
								j := iw + lo*s
								o := out[lo:hi]
								for i := range o {
									o[i] = src[j]
									j += s
								}
							}
						}
					}
				}
			}
		}
	}
}

// convDirect is a convolution by plain loops (float64, and the reference
// for the tests' checks).
func convDirect[T float32 | float64](p convProblem, x, w, bias, y []T) {
	g := p.geo
	cg, mg := p.c/p.group, p.m/p.group
	P, inSize, kSize := g.outSize(), g.inSize(), g.kSize()
	parallel.For(p.n*p.m, P*cg*kSize, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			img, m := t/p.m, t%p.m
			grp := m / mg
			out := y[t*P : (t+1)*P]
			wm := w[m*cg*kSize:]
			for od := range g.out[0] {
				for oh := range g.out[1] {
					for ow := range g.out[2] {
						var s T
						if bias != nil {
							s = bias[m]
						}
						for c := range cg {
							xc := x[(img*p.c+grp*cg+c)*inSize:]
							wc := wm[c*kSize:]
							for kd := range g.k[0] {
								id := od*g.stride[0] - g.padLo[0] + kd*g.dil[0]
								if id < 0 || id >= g.in[0] {
									continue
								}
								for kh := range g.k[1] {
									ih := oh*g.stride[1] - g.padLo[1] + kh*g.dil[1]
									if ih < 0 || ih >= g.in[1] {
										continue
									}
									for kw := range g.k[2] {
										iw := ow*g.stride[2] - g.padLo[2] + kw*g.dil[2]
										if iw < 0 || iw >= g.in[2] {
											continue
										}
										s += xc[(id*g.in[1]+ih)*g.in[2]+iw] * wc[(kd*g.k[1]+kh)*g.k[2]+kw]
									}
								}
							}
						}
						out[(od*g.out[1]+oh)*g.out[2]+ow] = s
					}
				}
			}
		}
	})
}
