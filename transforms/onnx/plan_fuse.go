package onnx

import (
	"slices"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// fuseSteps says whether plans fuse a Conv with the Add and the activation
// that alone read it (a variable for the tests, which compare fused plans
// with unfused ones).
var fuseSteps = true

// fuse makes each float32 Conv, MatMul or Gemm whose output is read by one
// step only one step with what follows it: for a MatMul first an Add of a bias
// (a constant vector along the last axis: every Linear layer's export),
// then for both an Add of a residual of the same shape, then an
// activation (a one-input operator, Clip with bounds known before the run,
// SiLU as x * Sigmoid(x), or GELU as PyTorch exports it with Erf: five
// operators, geluErf): Conv
// -> Add -> Relu (ResNet's blocks), Conv -> Add (MobileNet's), Conv ->
// Clip, HardSwish, Relu, Sigmoid (every CNN's), MatMul -> Add -> GELU and
// MatMul -> Add -> Add (a transformer's feed-forward and projections). The
// fused step takes the place of the last one it replaces, where all its
// inputs exist; the values between the fused steps are no longer made
// (nor placed in the workspace). Before those, attention's MatMul ->
// scale -> mask -> Softmax -> MatMul becomes one step (attention,
// fusedAttention); after them, an Add that a LayerNormalization alone
// reads (fusedAddNorm) does. The graph and its outputs are the same; a
// run computes each fused value once, in cache, instead of in passes of
// its own. It runs before place, for the CPU and the device alike.
func (p *Plan) fuse() {
	if !fuseSteps {
		return
	}
	p.fuseQDQ() // a QDQ model's groups to integer products (plan_fuse_quant.go)
	readers, readBy := p.reads()
	// readerList[id] are the steps that read value id, each once, in order
	// (made in one pass: a plan of 100,000 steps fuses in linear time).
	readerList := make([][]int, len(p.vals))
	for si, s := range p.steps {
		for i, id := range s.in {
			if id >= 0 && !slices.Contains(s.in[:i], id) {
				readerList[id] = append(readerList[id], si)
			}
		}
	}
	// readersOf are the steps that read value id, nil for a value read
	// more than twice or a graph output.
	readersOf := func(id int) []int {
		if id < 0 || readers[id] > 2 {
			return nil
		}
		return readerList[id]
	}
	// only is the step that alone reads value id (and is not fused yet), or -1.
	gone := make([]bool, len(p.steps))
	only := func(id int) int {
		if id < 0 || readers[id] != 1 || p.vals[id].meta.Type != nd.Float32 || gone[readBy[id]] {
			return -1
		}
		return readBy[id]
	}
	maker := make([]int, len(p.vals)) // the step that makes a value, or -1
	for i := range maker {
		maker[i] = -1
	}
	for si, s := range p.steps {
		for _, id := range s.out {
			if id >= 0 {
				maker[id] = si
			}
		}
	}
	fused := 0
	for si := range p.steps {
		members, in, k := p.attention(si, only, maker, gone)
		if k == nil {
			continue
		}
		last := members[len(members)-1]
		y := p.steps[last].out[0]
		n := &node{Node: p.steps[si].n.Node, kernel: k}
		ops := make([]string, len(members))
		for i, st := range members {
			ops[i] = p.steps[st].n.Op
		}
		n.Op = strings.Join(ops, "+")
		n.Outputs = []string{p.m.g.values[y].name}
		for _, st := range members[:len(members)-1] {
			gone[st] = true
		}
		p.steps[last] = pstep{n: n, in: in, out: []int{y}}
		fused++
	}
	for si := range p.steps {
		s := p.steps[si]
		var head string
		switch s.n.kernel.(type) {
		case *conv:
			head = "Conv"
		case *matMul:
			head = "MatMul"
		case *gemmOp:
			head = "Gemm"
		default:
			continue
		}
		if gone[si] || len(s.out) != 1 || s.out[0] < 0 {
			continue
		}
		y := s.out[0]
		if p.vals[y].meta.Type != nd.Float32 {
			continue
		}
		ep := &epilogue{head: head}
		members, bias, z := []int{si}, -1, -1
		if r := only(y); r >= 0 && head == "MatMul" {
			if b, ok := p.bias(p.steps[r], y); ok {
				bias = b
				ep.ops = append(ep.ops, p.steps[r].n.Op)
				members, y = append(members, r), p.steps[r].out[0]
			}
		}
		if r := only(y); r >= 0 {
			if zz, ok := p.residual(p.steps[r], y); ok {
				ep.residual, z = true, zz
				ep.ops = append(ep.ops, p.steps[r].n.Op)
				members, y = append(members, r), p.steps[r].out[0]
			}
		}
		if r := only(y); r >= 0 && p.activation(p.steps[r], ep) {
			ep.ops = append(ep.ops, p.steps[r].n.Op)
			members, y = append(members, r), p.steps[r].out[0]
		} else if steps, out := p.silu(y, readersOf, gone); steps != nil {
			ep.silu = true
			ep.ops = append(ep.ops, "SiLU")
			members, y = append(members, steps...), out
		} else if g, steps, out := p.gelu(y, readersOf, gone); g != nil {
			ep.gelu = g
			ep.ops = append(ep.ops, "Gelu")
			members, y = append(members, steps...), out
		}
		var ln *layerNorm
		var lnIn []int
		if r := only(y); r >= 0 && head != "Conv" {
			if ln, lnIn = p.rowNorm(p.steps[r], y); ln != nil {
				ep.ops = append(ep.ops, p.steps[r].n.Op)
				members, y = append(members, r), p.steps[r].out[0]
			}
		}
		if len(members) == 1 {
			continue
		}
		var n *node
		switch k := s.n.kernel.(type) {
		case *conv:
			in := []int{s.in[0], s.in[1], -1, z}
			if len(s.in) > 2 {
				in[2] = s.in[2]
			}
			n = &node{Node: s.n.Node, kernel: &fusedConv{conv: k, ep: ep}}
			s.in = in
		case *matMul:
			n = &node{Node: s.n.Node, kernel: &fusedMatMul{mm: k, ep: ep, ln: ln}}
			s.in = []int{s.in[0], s.in[1], bias, z}
			if ln != nil {
				s.in = append(s.in, lnIn...)
			}
		case *gemmOp:
			n = &node{Node: s.n.Node, kernel: &fusedGemm{g: k, ep: ep, ln: ln}}
			s.in = []int{s.in[0], s.in[1], -1, z}
			if c := p.steps[si].in; len(c) > 2 {
				s.in[2] = c[2]
			}
			if ln != nil {
				s.in = append(s.in, lnIn...)
			}
		}
		n.Op = ep.label()
		n.Outputs = []string{p.m.g.values[y].name}
		last := members[len(members)-1]
		for _, st := range members[:len(members)-1] {
			gone[st] = true
		}
		p.steps[last] = pstep{n: n, in: s.in, out: []int{y}}
		fused++
	}
	for si := range p.steps { // Add + LayerNormalization
		s := p.steps[si]
		add, ok := s.n.kernel.(*ewBinary)
		if !ok || gone[si] || add.op != ewAdd || len(s.in) != 2 || len(s.out) != 1 || s.out[0] < 0 {
			continue
		}
		y := s.out[0]
		r := only(y)
		if r < 0 || !p.rowAdd(s, y) {
			continue
		}
		ln, lnIn := p.rowNorm(p.steps[r], y)
		if ln == nil {
			continue
		}
		n := &node{Node: s.n.Node, kernel: &fusedAddNorm{add: add, ln: ln}}
		n.Op = s.n.Op + "+" + p.steps[r].n.Op
		out := p.steps[r].out[0]
		n.Outputs = []string{p.m.g.values[out].name}
		gone[si] = true
		p.steps[r] = pstep{n: n, in: append([]int{s.in[0], s.in[1]}, lnIn...), out: []int{out}}
		fused++
	}
	for si := range p.steps { // Transpose + Mul + Add (ops_scale_fused.go)
		if gone[si] {
			continue
		}
		if k, in, members := p.scaleAdd(si, only); k != nil {
			last := members[2]
			out := p.steps[last].out[0]
			n := &node{Node: p.steps[si].n.Node, kernel: k}
			n.Op = "Transpose+Mul+Add"
			n.Outputs = []string{p.m.g.values[out].name}
			gone[members[0]], gone[members[1]] = true, true
			p.steps[last] = pstep{n: n, in: in, out: []int{out}}
			fused++
		}
	}
	if fused == 0 {
		return
	}
	kept := p.steps[:0]
	for i, s := range p.steps {
		if !gone[i] {
			kept = append(kept, s)
		}
	}
	p.steps = kept
}

// residual returns the other operand of s when s is an Add of value y and
// a float32 value of y's shape (not y itself).
func (p *Plan) residual(s pstep, y int) (int, bool) {
	k, ok := s.n.kernel.(*ewBinary)
	if !ok || k.op != ewAdd || len(s.in) != 2 || len(s.out) != 1 || s.out[0] < 0 {
		return -1, false
	}
	z := s.in[0]
	if z == y {
		z = s.in[1]
	}
	if z < 0 || z == y || (s.in[0] != y && s.in[1] != y) {
		return -1, false
	}
	zm, ym := p.vals[z].meta, p.vals[y].meta
	if zm.Type != nd.Float32 || !nd.SameShape(zm.Shape, ym.Shape) || !nd.SameShape(p.vals[s.out[0]].meta.Shape, ym.Shape) {
		return -1, false
	}
	return z, true
}

// attention matches scaled dot-product attention from step si
// (fusedAttention): MatMul(Q, Kᵀ), then Div or Mul by a float32 scalar
// constant, then an Add of a float32 mask (broadcast to the scores'
// shape), then Softmax along the last axis, then MatMul of that and V,
// each value between read by its next step alone (the scale and the mask
// each optional), and the Transposes that make Q, Kᵀ and V and that
// transpose the output where the products can read and write through
// them (through). It returns the steps in order, the fused step's inputs
// (Q, Kᵀ, scale, mask, V) and its kernel; a nil kernel when si does not
// start attention.
func (p *Plan) attention(si int, only func(int) int, maker []int, gone []bool) ([]int, []int, *fusedAttention) {
	s := p.steps[si]
	qk, ok := s.n.kernel.(*matMul)
	if !ok || gone[si] || len(s.out) != 1 || s.out[0] < 0 || len(s.in) != 2 {
		return nil, nil, nil
	}
	for _, id := range s.in {
		if id < 0 || p.vals[id].meta.Type != nd.Float32 || len(p.vals[id].meta.Shape) < 2 {
			return nil, nil, nil
		}
	}
	k := &fusedAttention{qk: qk}
	members, in := []int{si}, []int{s.in[0], s.in[1], -1, -1, -1}
	y := s.out[0]
	shape := p.vals[y].meta.Shape
	// binary returns step r's ewBinary of y and another value (its index,
	// and whether y is the second operand) when r makes y's shape.
	binary := func(r int) (*ewBinary, int, bool) {
		if r < 0 {
			return nil, -1, false
		}
		st := p.steps[r]
		b, ok := st.n.kernel.(*ewBinary)
		if !ok || len(st.in) != 2 || len(st.out) != 1 || st.out[0] < 0 || !nd.SameShape(p.vals[st.out[0]].meta.Shape, shape) {
			return nil, -1, false
		}
		if st.in[0] == y && st.in[1] != y {
			return b, st.in[1], false
		}
		if st.in[1] == y && st.in[0] != y {
			return b, st.in[0], true
		}
		return nil, -1, false
	}
	r := only(y)
	if b, c, first := binary(r); b != nil && (b.op == ewDiv && !first || b.op == ewMul) && c >= 0 &&
		p.vals[c].st == stConst && p.vals[c].meta.Type == nd.Float32 && p.vals[c].meta.Value.Len() == 1 {
		k.scale, k.scaleFirst, in[2] = b, first, c
		members, y = append(members, r), p.steps[r].out[0]
		r = only(y)
	}
	if b, mk, first := binary(r); b != nil && b.op == ewAdd && mk >= 0 && p.vals[mk].meta.Type == nd.Float32 {
		k.mask, k.maskFirst, in[3] = b, first, mk
		members, y = append(members, r), p.steps[r].out[0]
		r = only(y)
	}
	if r < 0 {
		return nil, nil, nil
	}
	sm, ok := p.steps[r].n.kernel.(*softmaxKernel)
	if !ok || sm.log || len(p.steps[r].out) != 1 || p.steps[r].out[0] < 0 {
		return nil, nil, nil
	}
	if _, n, inner, err := sm.split(shape); err != nil || inner != 1 || n != shape[len(shape)-1] {
		return nil, nil, nil
	}
	k.softmax = sm
	members, y = append(members, r), p.steps[r].out[0]
	r = only(y)
	if r < 0 {
		return nil, nil, nil
	}
	pv, ok := p.steps[r].n.kernel.(*matMul)
	st := p.steps[r]
	if !ok || len(st.in) != 2 || st.in[0] != y || st.in[1] < 0 || st.in[1] == y || len(st.out) != 1 || st.out[0] < 0 ||
		p.vals[st.in[1]].meta.Type != nd.Float32 {
		return nil, nil, nil
	}
	if _, _, err := attentionShapes(p.vals[in[0]].meta.Shape, p.vals[in[1]].meta.Shape, p.vals[st.in[1]].meta.Shape); err != nil {
		return nil, nil, nil
	}
	k.pv, in[4] = pv, st.in[1]
	members = append(members, r)
	// The Transposes the products can read through: each read by this
	// step alone, each leaving one of the matrix's axes contiguous.
	var before []int
	for i, slot := range []int{0, 1, 4} {
		if t, src, ts := p.through(in[slot], maker, only, gone); t != nil {
			k.through[i], in[slot] = t, src
			before = append(before, ts)
		}
	}
	y = p.steps[r].out[0]
	if r := only(y); r >= 0 {
		if t, ok := p.steps[r].n.kernel.(*transpose); ok && len(p.steps[r].out) == 1 && p.steps[r].out[0] >= 0 {
			if perm, err := t.permOf(len(shape)); err == nil && perm[len(perm)-1] == len(perm)-1 {
				k.through[3] = t
				members = append(members, r)
			}
		}
	}
	slices.Sort(before)
	return append(before, members...), in, k
}

// through returns the Transpose that makes value id, its input and its
// step, when the Transpose's output is read by the attention step alone
// and the transposed matrix keeps one of its last two axes contiguous
// (gemm reads it as it is or transposed).
func (p *Plan) through(id int, maker []int, only func(int) int, gone []bool) (*transpose, int, int) {
	if id < 0 || maker[id] < 0 || gone[maker[id]] || only(id) < 0 {
		return nil, -1, -1
	}
	ts := p.steps[maker[id]]
	t, ok := ts.n.kernel.(*transpose)
	if !ok || len(ts.in) != 1 || ts.in[0] < 0 || p.vals[ts.in[0]].meta.Type != nd.Float32 {
		return nil, -1, -1
	}
	r := len(p.vals[id].meta.Shape)
	perm, err := t.permOf(r)
	if err != nil || r < 2 {
		return nil, -1, -1
	}
	if perm[r-1] != r-1 && perm[r-2] != r-1 {
		return nil, -1, -1
	}
	return t, ts.in[0], maker[id]
}

// rowNorm returns s's kernel and its Scale and B (-1: none) when s is a
// float32 LayerNormalization of value y along its last axis alone, with
// Scale and B of that axis's length and no Mean or InvStdDev output read.
func (p *Plan) rowNorm(s pstep, y int) (*layerNorm, []int) {
	k, ok := s.n.kernel.(*layerNorm)
	if !ok || len(s.in) < 2 || s.in[0] != y || s.in[1] < 0 || len(s.out) < 1 || s.out[0] < 0 {
		return nil, nil
	}
	for _, o := range s.out[1:] {
		if o >= 0 {
			return nil, nil
		}
	}
	shape := p.vals[y].meta.Shape
	if len(shape) == 0 {
		return nil, nil
	}
	if axis, err := NormAxis(k.axis, len(shape)); err != nil || axis != len(shape)-1 {
		return nil, nil
	}
	in := []int{s.in[1], -1}
	if len(s.in) > 2 {
		in[1] = s.in[2]
	}
	for _, id := range in {
		if id >= 0 && (p.vals[id].meta.Type != nd.Float32 || numel(p.vals[id].meta.Shape) != shape[len(shape)-1] ||
			len(p.vals[id].meta.Shape) > 1 && numel(p.vals[id].meta.Shape[:len(p.vals[id].meta.Shape)-1]) != 1) {
			return nil, nil
		}
	}
	return k, in
}

// rowAdd reports whether s, an Add making y, adds float32 operands that
// broadcast along every axis of y but the last (each row of y the sum of
// a row of each).
func (p *Plan) rowAdd(s pstep, y int) bool {
	shape := p.vals[y].meta.Shape
	if len(shape) == 0 || p.vals[y].meta.Type != nd.Float32 {
		return false
	}
	for _, id := range s.in {
		if id < 0 {
			return false
		}
		m := p.vals[id].meta
		if m.Type != nd.Float32 || len(m.Shape) == 0 || len(m.Shape) > len(shape) || m.Shape[len(m.Shape)-1] != shape[len(shape)-1] {
			return false
		}
	}
	return true
}

// binaryOf returns step si's kernel and step, and the input that value v
// is, where si is a step (not -1) of the modern binary operator op on two
// different inputs, v one of them; nil elsewhere.
func (p *Plan) binaryOf(si int, op ewOp, v int) (*ewBinary, pstep, int) {
	if si < 0 {
		return nil, pstep{}, 0
	}
	s := p.steps[si]
	k, ok := s.n.kernel.(*ewBinary)
	if !ok || k.op != op || k.legacy || len(s.in) != 2 || s.in[0] == s.in[1] || len(s.out) != 1 || s.out[0] < 0 {
		return nil, pstep{}, 0
	}
	if s.in[1] == v {
		return k, s, 1
	}
	return k, s, 0
}

// reads returns, for each value, how many inputs of the steps read it (a
// graph output 2 more: it stays whatever reads it) and the last step that
// reads it.
func (p *Plan) reads() (readers, readBy []int) {
	readers, readBy = make([]int, len(p.vals)), make([]int, len(p.vals))
	for si, s := range p.steps {
		for _, id := range s.in {
			if id >= 0 {
				readers[id]++
				readBy[id] = si
			}
		}
	}
	for _, o := range p.outputs {
		readers[o] += 2
	}
	return readers, readBy
}

// scaleAdd returns the kernel, the inputs (U, S, X) and the steps
// (Transpose, Mul, Add) of a Transpose back from channels last whose
// output only a Mul by a float32 constant of one value a channel (C x 1 x
// 1 or 1 x C x 1 x 1) reads, whose output only an Add of a float32 value
// of its shape reads: ConvNeXt's block end (ops_scale_fused.go). nil
// elsewhere.
func (p *Plan) scaleAdd(si int, only func(id int) int) (*fusedScaleAdd, []int, []int) {
	s := p.steps[si]
	tr, ok := s.n.kernel.(*transpose)
	if !ok || len(s.in) != 1 || s.in[0] < 0 || len(s.out) != 1 || s.out[0] < 0 {
		return nil, nil, nil
	}
	u, t := p.vals[s.in[0]].meta, s.out[0]
	if perm, err := tr.permOf(len(u.Shape)); err != nil || !slices.Equal(perm, []int{0, 3, 1, 2}) || u.Type != nd.Float32 {
		return nil, nil, nil
	}
	shape := p.vals[t].meta.Shape
	ms := only(t)
	mul, m, mulT := p.binaryOf(ms, ewMul, t)
	if mul == nil {
		return nil, nil, nil
	}
	k := &fusedScaleAdd{mul: mul, mulT: mulT}
	sc := m.in[1-k.mulT]
	if sc < 0 || p.vals[sc].st != stConst || p.vals[sc].meta.Type != nd.Float32 {
		return nil, nil, nil
	}
	ss := p.vals[sc].meta.Shape
	if len(ss) == 4 && ss[0] == 1 {
		ss = ss[1:]
	}
	if len(ss) != 3 || ss[0] != shape[1] || ss[1] != 1 || ss[2] != 1 || !nd.SameShape(p.vals[m.out[0]].meta.Shape, shape) {
		return nil, nil, nil
	}
	as := only(m.out[0])
	add, a, addM := p.binaryOf(as, ewAdd, m.out[0])
	if add == nil {
		return nil, nil, nil
	}
	k.add, k.addM = add, addM
	x := a.in[1-k.addM]
	if x < 0 || p.vals[x].meta.Type != nd.Float32 || !nd.SameShape(p.vals[x].meta.Shape, shape) || !nd.SameShape(p.vals[a.out[0]].meta.Shape, shape) {
		return nil, nil, nil
	}
	return k, []int{s.in[0], sc, x}, []int{si, ms, as}
}

// bias returns the other operand of s when s is an Add of value y (a
// MatMul's output) and a float32 constant vector along y's last axis (a
// shape of ones then y's last dimension), whose output is y's shape.
func (p *Plan) bias(s pstep, y int) (int, bool) {
	k, ok := s.n.kernel.(*ewBinary)
	if !ok || k.op != ewAdd || len(s.in) != 2 || len(s.out) != 1 || s.out[0] < 0 {
		return -1, false
	}
	b := s.in[0]
	if b == y {
		b = s.in[1]
	}
	if b < 0 || b == y || (s.in[0] != y && s.in[1] != y) {
		return -1, false
	}
	bm, ym := p.vals[b].meta, p.vals[y].meta
	if p.vals[b].st != stConst || bm.Type != nd.Float32 || len(ym.Shape) == 0 || len(bm.Shape) == 0 ||
		!nd.SameShape(p.vals[s.out[0]].meta.Shape, ym.Shape) {
		return -1, false
	}
	for i, d := range bm.Shape {
		if i == len(bm.Shape)-1 {
			if d != ym.Shape[len(ym.Shape)-1] {
				return -1, false
			}
		} else if d != 1 {
			return -1, false
		}
	}
	return b, true
}

// activation sets ep's activation to s's and reports true when s is one
// the epilogue computes: a one-input float32 operator (ops_math.go's
// unary kernel: Relu, LeakyRelu, HardSigmoid, HardSwish, Sigmoid, Tanh,
// ...), or Clip whose bounds are known before the run.
func (p *Plan) activation(s pstep, ep *epilogue) bool {
	if len(s.out) != 1 || s.out[0] < 0 || p.vals[s.out[0]].meta.Type != nd.Float32 {
		return false
	}
	switch k := s.n.kernel.(type) {
	case *ewUnary:
		ep.unary = k
		return true
	case *clipKernel:
		in := make([]Meta, len(s.in))
		for i, id := range s.in {
			if id >= 0 {
				in[i] = p.vals[id].meta
			}
		}
		lo, hi, ok := clipBounds(k, in)
		if ok {
			ep.clip, ep.lo, ep.hi = true, lo, hi
		}
		return ok
	}
	return false
}

// gelu matches GELU as PyTorch exports it with Erf (geluErf) reading x:
// x's two readers, Div(x, c) or Mul(x, c) and Mul(x, f) or, in the
// written-out form, Mul(x, ½); then Erf, Add of 1, and the Muls that make
// the output; every value between read by its next step alone, every
// constant a float32 scalar. It returns the form, the steps in order (the
// last makes the output) and the output; nil when x is not that.
func (p *Plan) gelu(x int, readersOf func(int) []int, gone []bool) (*geluErf, []int, int) {
	rs := readersOf(x)
	if len(rs) != 2 || p.vals[x].meta.Type != nd.Float32 {
		return nil, nil, -1
	}
	// step si is a binary op of kernel op on a and b in either order
	// (b < 0: a float32 scalar constant, returned), alone reading a.
	bin := func(si int, op ewOp, a, b int) (float32, bool) {
		if si < 0 || gone[si] {
			return 0, false
		}
		s := p.steps[si]
		k, ok := s.n.kernel.(*ewBinary)
		if !ok || k.op != op || len(s.in) != 2 || len(s.out) != 1 || s.out[0] < 0 || p.vals[s.out[0]].meta.Type != nd.Float32 {
			return 0, false
		}
		other := s.in[1]
		if s.in[0] != a {
			if s.in[1] != a || op == ewDiv {
				return 0, false
			}
			other = s.in[0]
		}
		if b >= 0 {
			return 0, other == b
		}
		v := p.vals[other]
		if other < 0 || v.st != stConst || v.meta.Type != nd.Float32 || v.meta.Value.Len() != 1 {
			return 0, false
		}
		return nd.MustAs[float32](*v.meta.Value)[0], true
	}
	next := func(si int) int { // the one step that reads step si's output
		rs := readersOf(p.steps[si].out[0])
		if len(rs) != 1 {
			return -1
		}
		return rs[0]
	}
	out := func(si int) int { return p.steps[si].out[0] }
	for _, order := range [][2]int{{rs[0], rs[1]}, {rs[1], rs[0]}} {
		pre, mul := order[0], order[1]
		g := &geluErf{}
		var ok bool
		if g.c, ok = bin(pre, ewDiv, x, -1); ok {
			g.div = true
		} else if g.c, ok = bin(pre, ewMul, x, -1); !ok {
			continue
		}
		erf := next(pre)
		if erf < 0 || gone[erf] {
			continue
		}
		if k, ok := p.steps[erf].n.kernel.(*ewUnary); !ok || k.op != unErf || p.vals[out(erf)].meta.Type != nd.Float32 {
			continue
		}
		add := next(erf)
		if one, ok := bin(add, ewAdd, out(erf), -1); !ok || one != 1 {
			continue
		}
		last := next(add)
		if half, ok := bin(mul, ewMul, x, -1); ok { // x * ½ first
			if _, ok := bin(last, ewMul, out(mul), out(add)); !ok {
				continue
			}
			g.half, g.halfFirst = half, true
			return g, []int{pre, mul, erf, add, last}, out(last)
		}
		if last != mul {
			continue
		}
		if _, ok := bin(mul, ewMul, x, out(add)); !ok {
			continue
		}
		fin := next(mul)
		half, ok := bin(fin, ewMul, out(mul), -1)
		if !ok {
			continue
		}
		g.half = half
		return g, []int{pre, erf, add, mul, fin}, out(fin)
	}
	return nil, nil, -1
}

// silu matches SiLU (Swish) as exporters write it reading x: x's two
// readers Sigmoid(x) and Mul of x and that (either order), the Sigmoid's
// output read by the Mul alone. It returns the two steps in order and the
// Mul's output; nil when x is not that.
func (p *Plan) silu(x int, readersOf func(int) []int, gone []bool) ([]int, int) {
	rs := readersOf(x)
	if len(rs) != 2 || p.vals[x].meta.Type != nd.Float32 {
		return nil, -1
	}
	for _, order := range [][2]int{{rs[0], rs[1]}, {rs[1], rs[0]}} {
		sg, mul := p.steps[order[0]], p.steps[order[1]]
		if gone[order[0]] || gone[order[1]] || order[0] > order[1] {
			continue
		}
		if k, ok := sg.n.kernel.(*ewUnary); !ok || k.op != unSigmoid || len(sg.out) != 1 || sg.out[0] < 0 {
			continue
		}
		s := sg.out[0]
		if r := readersOf(s); len(r) != 1 || r[0] != order[1] {
			continue
		}
		k, ok := mul.n.kernel.(*ewBinary)
		if !ok || k.op != ewMul || len(mul.in) != 2 || len(mul.out) != 1 || mul.out[0] < 0 ||
			!(mul.in[0] == x && mul.in[1] == s || mul.in[0] == s && mul.in[1] == x) ||
			p.vals[mul.out[0]].meta.Type != nd.Float32 || !nd.SameShape(p.vals[mul.out[0]].meta.Shape, p.vals[x].meta.Shape) {
			continue
		}
		return order[:], mul.out[0]
	}
	return nil, -1
}
