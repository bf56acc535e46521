package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The plan's blocked layout: the values between convolutions that the
// blocked kernel computes (ops_conv_nchwc.go) stay in its layout, blocks
// of 16 channels of 16-float pixels ([N][C/16][H][W][16], the channels past
// C zeros), as ONNX Runtime's graph optimizer keeps them between its NCHWc
// convolutions (https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html#layout-optimizations):
// a blocked convolution then reads its input as it is (no copy at all
// where it adds no padding: a 1x1 convolution's) and writes its sums where
// they belong, not through a transpose into planes and back at the next
// layer. A value is blocked where such a convolution makes it and only
// such convolutions read it (as their input or their residual): the layout
// changes only at the edges of the chains, where the last convolution
// writes NCHW itself, in cache, and the first reads NCHW into its padded
// copy. A blocked convolution's residual is added in the blocks whatever
// its output's layout; one made NCHW (a graph input, a pooling's) for a
// blocked output is copied into blocks once (a ReorderNCHWc step).
//
// A value keeps its NCHW shape and type in the plan; its data, in the
// workspace, is the blocked layout's (blockedSize values). Graph outputs
// and the values a plan hands on are NCHW. On the device every value is
// NCHW: a blocked step launches the Conv it replaces, a reorder copies.

// layoutSteps says whether plans lay out values in blocks between
// convolutions (a variable for the tests, which compare blocked plans with
// NCHW ones).
var layoutSteps = true

// nchwcForce makes conv.run compute every convolution that the blocked
// kernel can (nchwcCan) by it, NCHW values in and out: the sums of a
// blocked plan, for the tests that compare one with an NCHW plan bit for
// bit.
var nchwcForce = false

// nchwcCan reports whether the blocked kernel computes the float32
// convolution p where the plan lays out its input or output in blocks:
// one group or depthwise, two spatial axes at most, channels enough to
// fill blocks (nchwcMinChannels), a padded copy that fits (nchwcCopyFits);
// or of fewer channels, NCHW in (useNCHWcIn1).
// That is more than the run takes the blocked kernel for on NCHW values
// (useNCHWc, useNCHWcDepthwise: they count the copies in and out of the
// layout): a 1x1
// convolution of 16 to 63 channels, a depthwise one of wide rows, run
// faster blocked where the values around them stay blocked. Measured at
// one thread (AVX-512), alternate runs of one process, fastest of 10, the
// plan's layout for the run's choices -> for nchwcCan's: the test
// MobileNetV2 at batch 64 24.8 -> 16.1 ms, mobilenet_v3_small at batch 1
// 4.10 -> 3.24 ms (NCHW 6.2) and at batch 32 120 -> 102 ms (NCHW 141),
// efficientnet_b0 at batch 8 206 -> 178 ms.
func nchwcCan(p convProblem) bool {
	g := p.geo
	if nchwcWidth == 0 || p.n == 0 || p.m == 0 || g.k[0] != 1 || g.in[0] != 1 || g.padLo[0] != 0 || g.out[0] != 1 {
		return false
	}
	if pixelsConv(p) { // one product of the batch (convPixels)
		return false
	}
	if p.c < nchwcMinChannels { // NCHW in, a channel a step
		return useNCHWcIn1(p)
	}
	return (p.group == 1 || p.c == p.group && p.m == p.group) && nchwcCopyFits(p)
}

// blockedSize is the values of a float32 value of NCHW shape in the
// blocked layout: its channels rounded up to a block.
func blockedSize(shape []int) int {
	const B = nchwcBlock
	n := shape[0] * ((shape[1] + B - 1) / B * B)
	for _, d := range shape[2:] {
		n *= d
	}
	return n
}

// blockedStep returns the Conv of step s and its epilogue (nil: none)
// where the blocked kernel computes it (nchwcCan).
func (p *Plan) blockedStep(s pstep) (*conv, *epilogue) {
	var c *conv
	var ep *epilogue
	switch k := s.n.kernel.(type) {
	case *conv:
		c = k
	case *fusedConv:
		c, ep = k.conv, k.ep
	default:
		return nil, nil
	}
	if len(s.in) < 2 || s.in[0] < 0 || s.in[1] < 0 || len(s.out) != 1 || s.out[0] < 0 {
		return nil, nil
	}
	x, w, y := p.vals[s.in[0]].meta, p.vals[s.in[1]].meta, p.vals[s.out[0]].meta
	if x.Type != nd.Float32 || w.Type != nd.Float32 || y.Type != nd.Float32 || len(x.Shape) < 3 || len(x.Shape) > 4 {
		return nil, nil
	}
	var bShape []int
	hasB := len(s.in) > 2 && s.in[2] >= 0
	if hasB {
		bShape = p.vals[s.in[2]].meta.Shape
	}
	geo, err := c.shapes(x.Shape, w.Shape, bShape, hasB)
	if err != nil {
		return nil, nil
	}
	if !nchwcCan(convProblem{geo: geo, n: x.Shape[0], c: x.Shape[1], m: w.Shape[0], group: c.group}) {
		return nil, nil
	}
	return c, ep
}

// The steps of the layout: a blocked convolution reads its X and its
// residual as they are and writes blocked or NCHW; GlobalAveragePool
// (layoutMean) reads its input as it is and writes NCHW (N x C x 1 x 1);
// a Mul by a per-channel scale (layoutScale: squeeze-and-excitation's)
// reads the values it scales as they are and writes them in their layout;
// a float32 MaxPool without Indices (layoutPool) reads its input as it is
// and writes its output in its layout.
const (
	layoutNone = iota
	layoutConv
	layoutMean
	layoutScale
	layoutPool
)

// layoutStep is a step's part in the layout: its role, and for a
// convolution its Conv and epilogue, for a scale the input it scales.
type layoutStep struct {
	role int
	c    *conv
	ep   *epilogue
	in1  bool // layoutConv: X is read NCHW, a channel a step (nchwcIn1)
	x    int  // layoutScale: the input scaled (0 or 1)
}

// layoutOf returns step s's part in the layout.
func (p *Plan) layoutOf(s pstep) layoutStep {
	if c, ep := p.blockedStep(s); c != nil {
		return layoutStep{role: layoutConv, c: c, ep: ep, in1: p.vals[s.in[0]].meta.Shape[1] < nchwcMinChannels}
	}
	if len(s.out) != 1 || s.out[0] < 0 || p.vals[s.out[0]].meta.Type != nd.Float32 {
		return layoutStep{}
	}
	y := p.vals[s.out[0]].meta.Shape
	switch k := s.n.kernel.(type) {
	case globalAvgPool:
		if x := p.vals[s.in[0]].meta; x.Type == nd.Float32 && len(x.Shape) >= 3 {
			return layoutStep{role: layoutMean}
		}
	case *pool:
		if x := p.vals[s.in[0]].meta; k.max && x.Type == nd.Float32 && len(x.Shape) >= 3 && len(x.Shape) <= 4 {
			if g, err := k.geometry(x.Shape); err == nil && g.k[0] == 1 && g.in[0] == 1 && g.out[0] == 1 {
				return layoutStep{role: layoutPool}
			}
		}
	case *ewBinary:
		if k.op != ewMul || k.legacy || len(s.in) != 2 || s.in[0] < 0 || s.in[1] < 0 || s.in[0] == s.in[1] || len(y) < 3 {
			return layoutStep{}
		}
		for x := range 2 {
			a, b := p.vals[s.in[x]].meta, p.vals[s.in[1-x]].meta
			if a.Type != nd.Float32 || b.Type != nd.Float32 || !nd.SameShape(a.Shape, y) || len(b.Shape) != len(y) {
				continue
			}
			perChannel := (b.Shape[0] == 1 || b.Shape[0] == y[0]) && b.Shape[1] == y[1]
			for _, d := range b.Shape[2:] {
				perChannel = perChannel && d == 1
			}
			if perChannel {
				return layoutStep{role: layoutScale, x: x}
			}
		}
	}
	return layoutStep{}
}

// layout lays out the values between blocked convolutions in blocks:
// after fuse (the epilogues are the convolutions' own), before place (a
// blocked value's size is blockedSize).
func (p *Plan) layout() {
	if !layoutSteps || nchwcWidth == 0 {
		return
	}
	roles := make([]layoutStep, len(p.steps))
	found := false
	for si, s := range p.steps {
		roles[si] = p.layoutOf(s)
		found = found || roles[si].role == layoutConv
	}
	if !found {
		return
	}
	// asIs[id]: value id is not an output of the plan, a step reads it,
	// and every step that reads it takes it as it is, blocked or NCHW: a
	// blocked convolution as its X (but one of fewer channels than a
	// block, which reads NCHW planes) or residual, GlobalAveragePool, or a
	// scale the values it scales or a MaxPool its input where its own
	// output is such a value.
	const unread, yes, no = 0, 1, 2
	asIs := make([]int8, len(p.vals))
	for _, o := range p.outputs {
		asIs[o] = no
	}
	for si := len(p.steps) - 1; si >= 0; si-- { // a scale's output's readers before it
		s, r := p.steps[si], roles[si]
		for slot, id := range s.in {
			if id < 0 || asIs[id] == no {
				continue
			}
			ok := false
			switch r.role {
			case layoutConv:
				ok = slot == 0 && !r.in1 || slot == 3
			case layoutMean:
				ok = slot == 0
			case layoutScale:
				ok = slot == r.x && asIs[s.out[0]] == yes
			case layoutPool:
				ok = slot == 0 && asIs[s.out[0]] == yes
			}
			if ok {
				asIs[id] = yes
			} else {
				asIs[id] = no
			}
		}
	}
	// A value is blocked where it is asIs and a blocked convolution makes
	// it, or a scale or a MaxPool of a blocked value: no value is then
	// reordered out of the layout, and where a chain ends its last
	// convolution writes NCHW itself, in cache.
	for si, s := range p.steps {
		r := roles[si]
		if r.role == layoutConv || r.role == layoutScale && p.vals[s.in[r.x]].blocked || r.role == layoutPool && p.vals[s.in[0]].blocked {
			p.vals[s.out[0]].blocked = asIs[s.out[0]] == yes
		}
	}
	// The steps again, a blocked output's residual made NCHW (by a step
	// other than a blocked convolution: a graph input, a pooling)
	// reordered into blocks once, by a step just before its first such
	// reader; every other input is read as it is. A convolution whose
	// NCHW output only a Transpose to channels last reads writes that
	// Transpose's output itself (nhwc), and the Transpose goes.
	reordered := map[int]int{} // value -> its blocked copy
	taken := p.channelsLast(roles)
	pools := p.convPools(roles)
	steps := make([]pstep, 0, len(p.steps)+4)
	for si, s := range p.steps {
		r := roles[si]
		if taken[si] == -1 || pools[si] == -1 {
			continue // the Transpose or MaxPool a convolution took in
		}
		switch r.role {
		case layoutConv:
			yBlocked := p.vals[s.out[0]].blocked
			if yBlocked && r.ep != nil && r.ep.residual && !p.vals[s.in[3]].blocked {
				id := s.in[3]
				cp, ok := reordered[id]
				if !ok {
					cp = len(p.vals)
					v := p.vals[id]
					p.vals = append(p.vals, pval{meta: Meta{Type: v.meta.Type, Shape: v.meta.Shape}, first: -1, last: -1, blocked: true,
						name: p.valueName(id) + " (NCHWc)"})
					n := &node{Node: Node{Op: "ReorderNCHWc", Name: p.valueName(cp), Inputs: []string{p.valueName(id)}, Outputs: []string{p.valueName(cp)}},
						kernel: nchwcReorder{}}
					steps = append(steps, pstep{n: n, in: []int{id}, out: []int{cp}})
					reordered[id] = cp
				}
				s.in = slices.Clone(s.in) // the graph's node's, before
				s.in[3] = cp
			}
			l := convLayout{x: p.vals[s.in[0]].blocked, y: yBlocked}
			l.z = r.ep != nil && r.ep.residual && p.vals[s.in[3]].blocked
			n := s.n.Node
			if t := taken[si]; t > 0 {
				l.nhwc = true
				s.out = []int{p.steps[t].out[0]}
				n.Op += "+Transpose"
				n.Outputs = p.steps[t].n.Outputs
			}
			if t := pools[si]; t > 0 {
				l.pool = p.steps[t].n.kernel.(*pool)
				p.vals[s.out[0]].blocked = false // no step makes it now
				s.out = []int{p.steps[t].out[0]}
				n.Op += "+MaxPool"
				n.Outputs = p.steps[t].n.Outputs
			}
			if l != (convLayout{}) {
				s.n = &node{Node: n, kernel: &nchwcConv{conv: r.c, ep: r.ep, layout: l}}
			}
		case layoutMean:
			if p.vals[s.in[0]].blocked {
				s.n = &node{Node: s.n.Node, kernel: nchwcMean{}}
			}
		case layoutScale:
			if p.vals[s.in[r.x]].blocked {
				s.n = &node{Node: s.n.Node, kernel: &nchwcScale{mul: s.n.kernel.(*ewBinary), x: r.x}}
			}
		case layoutPool:
			if p.vals[s.in[0]].blocked {
				s.n = &node{Node: s.n.Node, kernel: nchwcMaxPool{pool: s.n.kernel.(*pool)}}
			}
		}
		steps = append(steps, s)
	}
	p.steps = steps
}

// channelsLast finds the blocked convolutions (roles) whose NCHW output
// (4-D, no residual added) is read by one step only, a Transpose to
// channels last (perm 0, 2, 3, 1; ConvNeXt's after each depthwise
// convolution), and not an output of the plan: taken[si] is, for such a
// convolution, the Transpose's step, and -1 for that step (0 elsewhere).
// The convolution writes its sums a position's channels at a time, as
// ONNX Runtime's NCHWc reorder writes channels last: no transpose pass.
func (p *Plan) channelsLast(roles []layoutStep) []int {
	taken := make([]int, len(p.steps))
	readers, by := p.reads() // a graph output never taken
	for si, s := range p.steps {
		r := roles[si]
		if r.role != layoutConv || r.ep != nil && r.ep.residual {
			continue
		}
		y := s.out[0]
		if readers[y] != 1 || p.vals[y].blocked || len(p.vals[y].meta.Shape) != 4 {
			continue
		}
		t := p.steps[by[y]]
		tr, ok := t.n.kernel.(*transpose)
		if !ok || len(t.out) != 1 || t.out[0] < 0 || t.in[0] != y {
			continue
		}
		if perm, err := tr.permOf(4); err != nil || !slices.Equal(perm, []int{0, 2, 3, 1}) {
			continue
		}
		taken[si], taken[by[y]] = by[y], -1
	}
	return taken
}

// layoutPoolBytes is the smallest output (bytes, NCHW) of a convolution
// that takes in the MaxPool that reads it (convPools; a variable for the
// tests).
var layoutPoolBytes = 4 << 20

// convPools finds the blocked convolutions (roles: one group, no residual)
// whose blocked 4-D output, of layoutPoolBytes or more, only a MaxPool
// reads, one whose output is blocked too: pools[si] is, for such a
// convolution, the MaxPool's step, and -1 for that step (0 elsewhere).
// The convolution computes its output a band of rows at a time into
// memory of its own, in L2, and pools each band there (pooledRows): the
// output, a network's stem's largest value (ResNet-50's 64 x 112 x 112 an
// image), is never written to memory whole nor read back, nor held in the
// plan's workspace. ONNX Runtime runs the two apart. Measured at one
// thread (fastest of 20 runs a step, alternating binaries, two and three
// pairs): the test ResNet at batch 64, its stem 3.50 ms and its pooling
// 1.79 -> 3.44 ms the two (two threads 2.21 and 0.94 -> 2.10);
// ResNet-50 at batch 8 12.3 and 2.7 -> 13.3.
// An output smaller stays in the caches for the pooling anyway, and where
// the cores share an image's rows, the rows two tasks' windows share are
// computed by both: ResNet-50 at batch 1 (3.2 MB), 1.51 and 0.21 -> 1.74
// ms at one thread, 0.83 and 0.12 -> 1.03 at two.
func (p *Plan) convPools(roles []layoutStep) []int {
	pools := make([]int, len(p.steps))
	readers, by := p.reads()
	for si, s := range p.steps {
		r := roles[si]
		if r.role != layoutConv || r.c.group != 1 || r.ep != nil && r.ep.residual {
			continue
		}
		y := s.out[0]
		if readers[y] != 1 || !p.vals[y].blocked || len(p.vals[y].meta.Shape) != 4 || 4*numel(p.vals[y].meta.Shape) < layoutPoolBytes {
			continue
		}
		t := by[y]
		if ps := p.steps[t]; roles[t].role != layoutPool || ps.in[0] != y || !p.vals[ps.out[0]].blocked || numel(p.vals[ps.out[0]].meta.Shape) == 0 {
			continue
		}
		pools[si], pools[t] = t, -1
	}
	return pools
}

// valueName is value id's name: the graph's, or for a value the plan
// added, the name it gave it.
func (p *Plan) valueName(id int) string {
	if v := p.vals[id]; v.name != "" {
		return v.name
	}
	return p.m.g.values[id].name
}

// nchwcConv is the kernel of a blocked convolution's step (a Conv, fused
// or not) in the plan's layout: inputs X, W, B (or left out) and Z (left
// out without a residual), each blocked or NCHW as layout says.
type nchwcConv struct {
	conv   *conv
	ep     *epilogue
	layout convLayout
}

func (k *nchwcConv) Infer(in []Meta) ([]Meta, error) {
	out, err := k.conv.Infer(in[:min(3, len(in))])
	if err == nil && k.layout.nhwc {
		s := out[0].Shape
		out[0].Shape = []int{s[0], s[2], s[3], s[1]}
	}
	if err == nil && k.layout.pool != nil {
		return k.layout.pool.Infer(out)
	}
	return out, err
}

func (k *nchwcConv) Run(in, out []nd.Array) error {
	var z []float32
	if k.ep != nil && k.ep.residual {
		z = rawFloats(in[3])
	}
	return k.conv.runIn(in[:min(3, len(in))], out, k.ep, z, k.layout)
}

// Overwrites reports that Y may be written over a blocked residual Z: the
// dense kernels read each sum's residual at its place as they store the
// sum there (convNCHWc), where Y is blocked too and a kernel call takes
// every input block. Not where an epilogue adds Z after the kernels stored
// the sums (a depthwise or grouped convolution, HardSwish within the
// kernels), nor on narrow rows whose input blocks come in chunks (the
// first chunk's sums land where Z is: convNCHWc would copy Z aside and add
// it in a pass after; the test ResNet's 64-channel layers at 8x8 4%
// slower so).
func (k *nchwcConv) Overwrites(out int, in []Meta) (int, bool) {
	if act, _ := k.ep.act(); out != 0 || k.ep == nil || !k.ep.residual || !k.layout.y || !k.layout.z || k.conv.group != 1 || act.swish || len(in) < 4 {
		return 0, false
	}
	x, w := in[0].Shape, in[1].Shape
	geo, err := k.conv.shapes(x, w, in[2].Shape, in[2].Type != nd.Undefined)
	if err != nil {
		return 0, false
	}
	p := convProblem{geo: geo, n: x[0], c: x[1], m: w[0], group: 1}
	bi := nchwcBlock
	if nchwcIn1(p) {
		bi = 1
	}
	cb := (p.c + bi - 1) / bi
	fb := nchwcGroupBlocksOf(p, nchwcWidth)
	fbg := min(fb, (p.m+nchwcBlock-1)/nchwcBlock) // the most: the fewest blocks a chunk
	return 3, nchwcChunkBlocks(cb, nchwcRowOf(p), geo.kSize(), bi, fbg, fb) == cb
}

// nchwcReorder is the kernel of a reorder step: its one input, NCHW,
// copied into the blocked layout.
type nchwcReorder struct{}

func (nchwcReorder) Infer(in []Meta) ([]Meta, error) {
	return []Meta{{Type: in[0].Type, Shape: in[0].Shape}}, nil
}

// reorderRun is one reorder's arguments, shared by its tasks.
type reorderRun struct {
	x, y      []float32
	c, cb, hw int
}

func (nchwcReorder) Run(in, out []nd.Array) error {
	const B = nchwcBlock
	s := in[0].Shape
	if in[0].Type != nd.Float32 || len(s) < 2 {
		return fmt.Errorf("onnx: a reorder of %v", in[0])
	}
	hw := 1
	for _, d := range s[2:] {
		hw *= d
	}
	r := reorderRun{x: nd.MustAs[float32](in[0]), y: rawFloats(out[0]), c: s[1], cb: (s[1] + B - 1) / B, hw: hw}
	parallel.EachWith(s[0]*r.cb, 2*B*hw, r, (*reorderRun).block)
	return nil
}

// block reorders block t (image t/cb, channels (t%cb)*16 on).
func (r *reorderRun) block(t int) {
	const B = nchwcBlock
	img, b := t/r.cb, t%r.cb
	chans := min(B, r.c-b*B)
	blk := r.y[t*r.hw*B:][:r.hw*B]
	planes := r.x[(img*r.c+b*B)*r.hw:][:chans*r.hw]
	if chans < B {
		clear(blk) // the channels past C
	}
	q := 0
	if chans == B {
		for ; q+B <= r.hw && transpose16(blk[q*B:], B, planes[q:], r.hw); q += B {
		}
	}
	for c := range chans {
		plane := planes[c*r.hw : (c+1)*r.hw]
		for i := q; i < r.hw; i++ {
			blk[i*B+c] = plane[i]
		}
	}
}

// nchwcMean is GlobalAveragePool of a blocked value: the mean of each
// channel's plane, NCHW (N x C x 1 ...), summed in float64 as the NCHW
// kernel sums (planeMeansOf).
type nchwcMean struct{}

func (nchwcMean) Infer(in []Meta) ([]Meta, error) { return globalAvgPool{}.Infer(in) }

// meanRun is a run of nchwcMean, what its tasks share.
type meanRun struct {
	x, y      []float32
	c, cb, hw int
}

func (nchwcMean) Run(in, out []nd.Array) error {
	const B = nchwcBlock
	s := in[0].Shape
	r := meanRun{x: rawFloats(in[0]), y: nd.MustAs[float32](out[0]), c: s[1], cb: (s[1] + B - 1) / B, hw: numel(s[2:])}
	parallel.EachWith(s[0]*r.cb, B*r.hw, r, (*meanRun).block)
	return nil
}

// block computes the means of block t (image t/cb, channels (t%cb)*16 on):
// a whole block's 16 straight into Y (blockMeanVec).
func (r *meanRun) block(t int) {
	const B = nchwcBlock
	img, b := t/r.cb, t%r.cb
	blk := r.x[t*r.hw*B:][:r.hw*B]
	if r.c-b*B >= B && blockMeanVec(r.y[img*r.c+b*B:], blk) {
		return
	}
	var acc [B]float64
	if !blockSumVec(blk, &acc) {
		for q := range r.hw {
			for l, v := range blk[q*B : (q+1)*B] {
				acc[l] += float64(v)
			}
		}
	}
	for l := range min(B, r.c-b*B) {
		r.y[img*r.c+b*B+l] = float32(acc[l] / float64(r.hw))
	}
}

// nchwcScale is a Mul of a blocked value by a per-channel scale (N or 1 x
// C x 1 ...), NCHW: the product, blocked.
type nchwcScale struct {
	mul *ewBinary
	x   int // the input scaled
}

func (k *nchwcScale) Infer(in []Meta) ([]Meta, error) { return k.mul.Infer(in) }

// scaleRun is a run of nchwcScale, what its tasks share.
type scaleRun struct {
	x, s, y       []float32
	c, cb, hw, sn int
}

func (k *nchwcScale) Run(in, out []nd.Array) error {
	const B = nchwcBlock
	x, sc := in[k.x], in[1-k.x]
	s := x.Shape
	r := scaleRun{x: rawFloats(x), s: nd.MustAs[float32](sc), y: rawFloats(out[0]), c: s[1], cb: (s[1] + B - 1) / B, hw: numel(s[2:]), sn: sc.Shape[0]}
	parallel.EachWith(s[0]*r.cb, B*r.hw, r, (*scaleRun).block)
	return nil
}

// block scales block t (image t/cb, channels (t%cb)*16 on); the channels
// past C stay 0.
func (r *scaleRun) block(t int) {
	const B = nchwcBlock
	img, b := t/r.cb, t%r.cb
	var s [B]float32
	copy(s[:], r.s[(img%r.sn)*r.c+b*B:][:min(B, r.c-b*B)])
	x, y := r.x[t*r.hw*B:][:r.hw*B], r.y[t*r.hw*B:][:r.hw*B]
	if blockScaleVec(y, x, &s) {
		return
	}
	for q := range r.hw {
		for l, v := range x[q*B : (q+1)*B] {
			y[q*B+l] = v * s[l]
		}
	}
}

// nchwcMaxPool is MaxPool of a blocked value (float32, one or two spatial
// axes, no Indices): each block's window maxima, blocked, as the NCHW
// kernel takes them (maxPoolVector: NaN where a window holds one, -Inf
// where it holds only padding). A network's stem (a convolution, then a
// max pooling, then the first block's convolutions and residual) then
// stays in blocks: no transpose out of them, no reorder back.
type nchwcMaxPool struct{ pool *pool }

func (k nchwcMaxPool) Infer(in []Meta) ([]Meta, error) { return k.pool.Infer(in) }

// maxPoolBlockedRun is a run of nchwcMaxPool, what its tasks share.
type maxPoolBlockedRun struct {
	g       geometry
	x, y    []float32
	hw, ohw int
	c, cb   int  // channels, blocks
	vector  bool // the layout's vector loops (blockWidth): maxRows
}

// negInf32 is float32 -Inf, a window of padding alone's maximum.
var negInf32 = float32(math.Inf(-1))

func (k nchwcMaxPool) Run(in, out []nd.Array) error {
	const B = nchwcBlock
	s := in[0].Shape
	g, err := k.pool.geometry(s)
	if err != nil {
		return err
	}
	if g.k[0] != 1 || g.in[0] != 1 || g.out[0] != 1 {
		return fmt.Errorf("onnx: a blocked MaxPool of %v", s)
	}
	r := maxPoolBlockedRun{g: g, x: rawFloats(in[0]), y: rawFloats(out[0]), hw: g.inSize(), ohw: g.outSize(), c: s[1], cb: (s[1] + B - 1) / B, vector: blockWidth != 0}
	parallel.EachWith(s[0]*r.cb, B*(r.hw+r.ohw*g.kSize()/4), r, (*maxPoolBlockedRun).block)
	return nil
}

// block pools block t (image t/cb, channels (t%cb)*16 on).
func (r *maxPoolBlockedRun) block(t int) {
	const B = nchwcBlock
	r.rows(r.x[t*r.hw*B:][:r.hw*B], 0, r.y[t*r.ohw*B:][:r.ohw*B], 0, r.g.out[1], min(B, r.c-t%r.cb*B))
}

// rows pools output rows oh0 to oh1 of a block of chans channels (of 16)
// into y, its output plane, from x, its input's rows from row xRow0 on
// (every row those windows read): for each output row, the positions
// whose windows lie inside the input's columns at one maxRows call (one
// source a tap, the positions sw pixels apart), each other position at
// one of its own (its taps inside the input only: the padding is -Inf,
// never the maximum).
func (r *maxPoolBlockedRun) rows(x []float32, xRow0 int, y []float32, oh0, oh1, chans int) {
	const B = nchwcBlock
	g := r.g
	iw, ow := g.in[2], g.out[2]
	ss := dwSrcsPool.Get().(*dwSrcs)
	defer dwSrcsPool.Put(ss)
	for oh := oh0; oh < oh1; oh++ {
		h0 := oh*g.stride[1] - g.padLo[1]
		hlo, hhi := windowRange(h0, g.k[1], g.dil[1], g.in[1])
		h0 -= xRow0 // x's row of input row h0
		for o := 0; o < ow; {
			w0 := o*g.stride[2] - g.padLo[2]
			wlo, whi := windowRange(w0, g.k[2], g.dil[2], iw)
			n := 1
			if wlo == 0 && whi == g.k[2] { // the run of whole windows
				for o+n < ow && (o+n)*g.stride[2]-g.padLo[2]+(g.k[2]-1)*g.dil[2] < iw {
					n++
				}
			}
			yo := y[(oh*ow+o)*B : (oh*ow+o+n)*B]
			switch {
			case hlo == hhi || wlo == whi: // padding alone: -Inf, the channels past C 0 as in every block
				for i := range yo {
					yo[i] = 0
					if i%B < chans {
						yo[i] = negInf32
					}
				}
			case r.vector:
				srcs := ss.s[:0]
				for a := hlo; a < hhi; a++ {
					for c := wlo; c < whi; c++ {
						srcs = append(srcs, &x[((h0+a*g.dil[1])*iw+w0+c*g.dil[2])*B])
					}
				}
				ss.s = srcs
				ok := maxRows(yo, B, n, B, srcs, g.stride[2]*B)
				clear(srcs)
				if !ok {
					r.positions(yo, x, n, h0, w0, hlo, hhi, wlo, whi)
				}
			default:
				r.positions(yo, x, n, h0, w0, hlo, hhi, wlo, whi)
			}
			o += n
		}
	}
}

// positions pools n positions of a block in plain Go: yo's, the windows'
// taps [hlo, hhi) x [wlo, whi) of the first at x's row h0 and column w0
// (Go's max: NaN where a window holds one, as maxRows).
func (r *maxPoolBlockedRun) positions(yo, x []float32, n, h0, w0, hlo, hhi, wlo, whi int) {
	const B = nchwcBlock
	g := r.g
	for j := range n {
		yj := yo[j*B : (j+1)*B]
		for i := range yj {
			yj[i] = negInf32
		}
		for a := hlo; a < hhi; a++ {
			for c := wlo; c < whi; c++ {
				xv := x[((h0+a*g.dil[1])*g.in[2]+w0+j*g.stride[2]+c*g.dil[2])*B:][:B]
				for i, v := range xv {
					yj[i] = max(yj[i], v)
				}
			}
		}
	}
}
