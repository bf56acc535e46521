package onnx

import (
	"container/list"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// A Plan is a model planned for one set of input shapes: every value's type
// and shape inferred, the values known before the run computed (shapes and
// what is made from them), and the rest placed in one workspace, where
// values whose lifetimes do not overlap share memory. A run then only
// computes. Plans are made on first use of a shape and kept (the last
// maxPlans per model).
type Plan struct {
	m     *Model
	vals  []pval
	steps []pstep
	// inputs and outputs are the graph's, as value indices.
	inputs, outputs []int
	// keyed are the inputs whose contents the plan depends on.
	keyed []bool
	// A plan ends early, at node stop, when the shapes from there on
	// depend on what the run computes: a DataShaped node whose outputs'
	// shapes come from its inputs' contents (shaped), or a node that needs
	// the contents of a value computed in the run (its shape input, say).
	// Its outputs are then the values the rest of the model reads; the run
	// computes stop by RunShaped where shaped, and hands on to a plan of
	// the rest (from rest, by the shapes and keyed contents of restIn).
	stop   *node
	stopAt int // stop's index in the graph's nodes
	shaped bool
	restIn []int
	rest   planCache
	// known are the values computed while planning (shapes and what is
	// made of them) that the rest reads: they are known there too.
	known map[int]Meta
	// work is the workspace's size in bytes; largest is the value of the
	// workspace that takes the most of it (named in errors).
	work, largest int
	// overlaps counts the lifetimes place looked at (its work: about
	// linear in the steps, tested).
	overlaps     int
	deviceConsts // the planned constants' place on the device (gpu.go)
}

type storage uint8

const (
	stUnused storage = iota
	stConst          // known before the run: meta.Value
	stInput          // fed by the caller
	stWork           // in the workspace, at off
	stView           // a view of another value's data (base)
	stOutput         // a graph output, allocated for each run
)

type pval struct {
	meta Meta
	st   storage
	off  int
	size int
	base int
	// in is the input of the step that makes the value that it views or
	// is written over (stView): the step's in[in] holds base's data.
	in int
	// first and last are the steps that make and last read the value.
	first, last int
	// by is the node that makes the value (nil for a graph input or a
	// constant of the model), named in errors.
	by *node
	// blocked: the value is in the blocked channel layout of the plan's
	// convolutions (plan_layout.go), its size blockedSize.
	blocked bool
	// name is a value's that the plan added (a layout's copy); the graph's
	// values are named in the graph.
	name string
}

type pstep struct {
	n       *node
	in, out []int
}

// WorkspaceBytes is the size of the memory a run uses for intermediate
// values (outputs apart).
func (p *Plan) WorkspaceBytes() int { return p.work }

// StepOps lists the operators of the plan's steps in the order a run
// takes them, a fused step's joined by "+" ("Conv+Add+Relu",
// "MatMul+Add+Gelu"): what the plan fused (plan_fuse.go) and what it runs,
// with the copies of its layout ("ReorderNCHWc": a value made NCHW copied
// into the blocked layout for a convolution, plan_layout.go).
// A plan that ends early (its outputs' shapes come from the data) lists its
// own steps, not those of the plans the run goes on with.
func (p *Plan) StepOps() []string {
	ops := make([]string, len(p.steps))
	for i, s := range p.steps {
		ops[i] = s.n.Op
	}
	return ops
}

// OutputMeta returns the types and shapes of the outputs (as the runtime
// holds them: Float16 outputs as Float32 until Run narrows them). Where
// they depend on what the run computes (the plan ends early, at a node
// whose outputs' shapes come from the data) it returns an error naming
// that node.
func (p *Plan) OutputMeta() ([]Meta, error) {
	if err := p.shapesFromData(); err != nil {
		return nil, err
	}
	out := make([]Meta, len(p.outputs))
	for i, o := range p.outputs {
		out[i] = p.vals[o].meta
	}
	return out, nil
}

// shapesFromData is the error of a plan that ends early (its outputs'
// shapes come from the data), nil for another.
func (p *Plan) shapesFromData() error {
	if p.stop == nil {
		return nil
	}
	return fmt.Errorf("the outputs' shapes depend on the data: %s's shapes are known only when the model runs", p.stop.label())
}

// maxPlans is how many plans a model keeps (one per input shape; a
// pipeline's batches come in a few sizes).
const maxPlans = 32

// planCache holds a model's plans by key, least recently used out first.
type planCache struct {
	mu    sync.Mutex
	byKey map[string]*list.Element
	lru   list.List
	// keyed marks the graph inputs whose contents plans depend on (found
	// while planning: an input read as a shape).
	keyed []bool
}

type planEntry struct {
	key  string
	plan *Plan
}

// Plan returns the plan of the model for inputs (fed as Run takes them),
// made on first use of their shapes.
func (m *Model) Plan(inputs []nd.Array) (*Plan, error) { return m.plan(inputs, 0) }

// plan is Plan with the memory budget of the values it computes (0: the
// default).
func (m *Model) plan(inputs []nd.Array, budget int64) (*Plan, error) {
	metas, err := m.inputMetas(inputs)
	if err != nil {
		return nil, err
	}
	return m.plans.get(metas, inputs, budget, func(keyed []bool, mem *memory) (*Plan, int, error) {
		return m.newPlan(0, m.g.inputs, metas, inputs, keyed, nil, mem)
	})
}

// get returns the cache's plan for inputs of metas, made by make (with
// the inputs whose contents plans depend on, and the memory of the values
// it computes) on first use. newPlan returns more >= 0, and no plan, when it
// finds that the plan depends on the contents of input more: the cache
// keys on it from then on, and makes the plan again.
func (c *planCache) get(metas []Meta, inputs []nd.Array, budget int64, newPlan func(keyed []bool, mem *memory) (*Plan, int, error)) (*Plan, error) {
	for {
		c.mu.Lock()
		if c.keyed == nil {
			c.keyed = make([]bool, len(metas))
		}
		keyed := append([]bool{}, c.keyed...)
		key := planKey(metas, inputs, keyed)
		if e, ok := c.byKey[key]; ok {
			c.lru.MoveToFront(e)
			c.mu.Unlock()
			return e.Value.(*planEntry).plan, nil
		}
		c.mu.Unlock()
		mem, err := newMemory(budget)
		if err != nil {
			return nil, err
		}
		p, more, err := newPlan(keyed, mem)
		if err != nil {
			return nil, err
		}
		if more >= 0 { // an input turned out to be read as a shape: key on it
			c.mu.Lock()
			c.keyed[more] = true
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		if c.byKey == nil {
			c.byKey = map[string]*list.Element{}
		}
		if e, ok := c.byKey[key]; ok { // made meanwhile by another caller
			p = e.Value.(*planEntry).plan
		} else {
			c.byKey[key] = c.lru.PushFront(&planEntry{key, p})
			if c.lru.Len() > maxPlans {
				old := c.lru.Back()
				c.lru.Remove(old)
				delete(c.byKey, old.Value.(*planEntry).key)
			}
		}
		c.mu.Unlock()
		return p, nil
	}
}

// planKey is the key of a plan: the inputs' types and shapes, and the
// contents of those inputs the plan reads as shapes.
func planKey(metas []Meta, inputs []nd.Array, keyed []bool) string {
	var b strings.Builder
	for i, m := range metas {
		fmt.Fprintf(&b, "%d%v;", m.Type, m.Shape)
		if keyed[i] {
			fmt.Fprintf(&b, "=%x;", inputs[i].Data)
		}
	}
	return b.String()
}

// inputMetas checks inputs against the model's declared inputs: their
// number, types and ranks, and their sizes where the model fixes them (and
// a symbolic dimension the same wherever it appears).
func (m *Model) inputMetas(inputs []nd.Array) ([]Meta, error) {
	if len(inputs) != len(m.Inputs) {
		return nil, fmt.Errorf("%d inputs for a model of %d (%s)", len(inputs), len(m.Inputs), inputNames(m.Inputs))
	}
	metas := make([]Meta, len(inputs))
	params := map[string]int{}
	for i, a := range inputs {
		want := m.Inputs[i]
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("input %q: %w", want.Name, err)
		}
		t := a.Type
		if t != want.Type && want.Type != nd.Undefined && !(internal(want.Type) == nd.Float32 && t == nd.Float32) { // Undefined: a subgraph's untyped input
			return nil, fmt.Errorf("input %q is %v, the model takes %v", want.Name, t, want.Type)
		}
		if want.Shape != nil {
			if len(a.Shape) != len(want.Shape) {
				return nil, fmt.Errorf("input %q has shape %s, the model takes rank %d (%s)", want.Name, nd.ShapeString(a.Shape), len(want.Shape), want)
			}
			for d, dim := range want.Shape {
				switch {
				case dim.Size >= 0 && a.Shape[d] != dim.Size:
					return nil, fmt.Errorf("input %q has shape %s, the model takes %s", want.Name, nd.ShapeString(a.Shape), want)
				case dim.Param != "":
					if s, seen := params[dim.Param]; seen && s != a.Shape[d] {
						return nil, fmt.Errorf("input %q: dimension %s is %d here and %d in another input", want.Name, dim.Param, a.Shape[d], s)
					}
					params[dim.Param] = a.Shape[d]
				}
			}
		}
		metas[i] = Meta{Type: internal(t), Shape: a.Shape}
	}
	return metas, nil
}

func inputNames(in []ValueInfo) string {
	names := make([]string, len(in))
	for i, v := range in {
		names[i] = v.String()
	}
	return strings.Join(names, ", ")
}

// newPlan plans the model's nodes from the from'th on, for the values fed
// (ids: the graph's inputs for a whole model, the values an earlier plan
// hands on for the rest of one) of metas, and the values known from the
// plans before. When a node needs the contents of a fed value not yet
// keyed, it returns that value's index in ids as more (and no plan): the
// caller keys plans on it and plans again.
func (m *Model) newPlan(from int, ids []int, metas []Meta, inputs []nd.Array, keyed []bool, known map[int]Meta, mem *memory) (p *Plan, more int, err error) {
	g := m.g
	p = &Plan{m: m, vals: make([]pval, len(g.values)), inputs: ids, outputs: g.outputs, keyed: keyed}
	for i, v := range g.values {
		p.vals[i] = pval{first: -1, last: -1}
		if v.init != nil {
			p.vals[i].meta = Meta{Type: v.init.Type, Shape: v.init.Shape, Value: v.init}
			p.vals[i].st = stConst
		}
	}
	for id, mt := range known {
		p.vals[id].meta = mt
		p.vals[id].st = stConst
	}
	fed := make(map[int]int, len(ids))
	for i, id := range ids {
		fed[id] = i
		mt := metas[i]
		if keyed[i] {
			a := inputs[i]
			if a.Type != mt.Type { // a Float16 input: its Float32 value
				if a, err = mem.convert(a, mt.Type, nil, func() string { return fmt.Sprintf("input %q", g.values[id].name) }); err != nil {
					return nil, -1, err
				}
			}
			mt.Value = &a
		}
		p.vals[id].meta = mt
		p.vals[id].st = stInput
	}
	for ni := from; ni < len(g.nodes); ni++ {
		n := g.nodes[ni]
		in := make([]Meta, len(n.in))
		known := true
		for i, id := range n.in {
			if id < 0 {
				continue
			}
			in[i] = p.vals[id].meta
			if in[i].Value == nil {
				known = false
			}
		}
		out, err := infer(n, in)
		if err != nil {
			if i, ok := isNeedValue(err); ok {
				src := n.in[i]
				k, isFed := fed[src]
				if isFed && !keyed[k] {
					return nil, k, nil
				}
				if !isFed && src >= 0 && p.vals[src].st != stConst { // computed in the run: plan the rest when it is
					p.end(ni, false)
					return p, -1, nil
				}
				return nil, -1, fmt.Errorf("%s: input %q: the runtime needs its contents before the node runs, but they are not known", n.label(), n.Inputs[i])
			}
			if errors.Is(err, errShapeFromData) {
				if _, ok := n.kernel.(DataShaped); ok {
					p.end(ni, true)
					return p, -1, nil
				}
			}
			return nil, -1, err
		}
		_, random := n.kernel.(Nondeterministic)
		if known && !random {
			arrays, err := compute(n, in, out, maxFoldPlanBytes, mem)
			if err != nil {
				return nil, -1, err
			}
			if arrays != nil {
				for i, id := range n.out {
					if id >= 0 {
						a := arrays[i]
						p.vals[id] = pval{meta: Meta{Type: a.Type, Shape: a.Shape, Value: &a}, st: stConst, first: -1, last: -1, by: n}
					}
				}
				continue
			}
		}
		allKnown := true
		for i, id := range n.out {
			if id < 0 {
				continue
			}
			p.vals[id].meta = out[i]
			if out[i].Value != nil {
				p.vals[id].st = stConst
			} else {
				allKnown = false
			}
		}
		if !allKnown {
			p.steps = append(p.steps, pstep{n: n, in: n.in, out: n.out})
		}
	}
	p.fuse()
	p.layout()
	p.place()
	return p, -1, nil
}

// end makes p a plan that ends before node ni (g.nodes[ni]), whose shapes
// depend on what the run computes: its outputs become the values the rest
// reads (and the graph's outputs made so far), and the values known while
// planning that the rest reads are handed on as known.
func (p *Plan) end(ni int, shaped bool) {
	g := p.m.g
	p.stop, p.stopAt, p.shaped = g.nodes[ni], ni, shaped
	// last[id] is the last node that reads value id (len(nodes) for a
	// graph output).
	last := make([]int, len(g.values))
	for i := range last {
		last[i] = -1
	}
	for j, n := range g.nodes[ni:] {
		for _, id := range n.in {
			if id >= 0 {
				last[id] = ni + j
			}
		}
	}
	for _, id := range g.outputs {
		last[id] = len(g.nodes)
	}
	p.outputs, p.restIn = nil, nil
	p.known = map[int]Meta{}
	for id, v := range p.vals {
		if last[id] < ni {
			continue
		}
		switch v.st {
		case stConst:
			if g.values[id].init == nil || v.meta.Value != g.values[id].init {
				p.known[id] = v.meta
			}
		case stUnused:
			if v.meta.Type == nd.Undefined {
				continue // not made yet: the rest makes it
			}
			fallthrough
		default:
			p.outputs = append(p.outputs, id)
			if !shaped || last[id] > ni {
				p.restIn = append(p.restIn, id)
			}
		}
	}
	if shaped {
		for _, id := range p.stop.out {
			if id >= 0 {
				p.restIn = append(p.restIn, id)
			}
		}
	}
	p.fuse()
	p.layout()
	p.place()
}

// maxFoldPlanBytes bounds a node computed while planning (its inputs known
// from shapes): small shape arithmetic, never a layer.
const maxFoldPlanBytes = 1 << 20

// place decides where each value of the run lives: graph outputs on their
// own, views on their base, the rest in the workspace at offsets where no
// two values alive at once overlap.
func (p *Plan) place() {
	isOutput := map[int]bool{}
	for _, o := range p.outputs {
		isOutput[o] = true
	}
	for si, s := range p.steps {
		var viewer Viewer
		if v, ok := s.n.kernel.(Viewer); ok {
			viewer = v
		}
		for _, id := range s.in {
			if id >= 0 {
				p.vals[id].last = si
			}
		}
		for i, id := range s.out {
			if id < 0 || p.vals[id].st == stConst {
				continue
			}
			v := &p.vals[id]
			v.first, v.last, v.by = si, si, s.n
			if viewer != nil {
				if j, ok := viewer.View(i); ok && s.in[j] >= 0 && !isOutput[id] {
					v.st, v.base, v.in = stView, s.in[j], j
					continue
				}
			}
			if isOutput[id] {
				v.st = stOutput
				continue
			}
			v.st = stWork
			n, _ := nd.Numel(v.meta.Shape)
			if v.blocked {
				n = blockedSize(v.meta.Shape)
			}
			v.size = n * v.meta.Type.Size()
		}
	}
	// A view keeps its base alive as long as it is read (views of views
	// follow the chain; steps are in order, so bases come first).
	for i := len(p.vals) - 1; i >= 0; i-- {
		v := &p.vals[i]
		if v.st != stView {
			continue
		}
		b := v.base
		for p.vals[b].st == stView {
			b = p.vals[b].base
		}
		v.base = b
		if v.last > p.vals[b].last {
			p.vals[b].last = v.last
		}
	}
	p.overwrite()
	var work []int
	for i, v := range p.vals {
		if v.st == stWork {
			work = append(work, i)
		}
	}
	// Largest first, each at the lowest offset free over its lifetime. The
	// values placed before it whose lifetimes overlap its own come from an
	// interval tree of the lifetimes, so a plan of n steps takes about
	// n log n plus the overlaps, not n^2 (a chain of 100,000 nodes).
	sort.SliceStable(work, func(a, b int) bool { return p.vals[work[a]].size > p.vals[work[b]].size })
	if len(work) > 0 {
		p.largest = work[0]
	}
	tree := newLifetimes(p.vals, work)
	placed := make([]bool, len(p.vals))
	type span struct{ lo, hi int }
	var busy []span
	for _, id := range work {
		v := &p.vals[id]
		busy = busy[:0]
		tree.overlapping(v.first, v.last, func(o int) {
			p.overlaps++
			if placed[o] {
				w := p.vals[o]
				busy = append(busy, span{w.off, w.off + align(w.size)})
			}
		})
		sort.Slice(busy, func(a, b int) bool { return busy[a].lo < busy[b].lo })
		off := 0
		for _, s := range busy {
			if off+align(v.size) <= s.lo {
				break
			}
			off = max(off, s.hi)
		}
		v.off = off
		p.work = max(p.work, off+align(v.size))
		placed[id] = true
	}
}

// overwrite puts each output that its step may write over an input
// (Overwriter) in that input's memory where the input is a workspace value
// (or a view of one) of the output's size that no later step reads: the
// output becomes a view of the input's base, which lives on as long as it
// is read. Chains follow: a residual written over by one block's output,
// which the next block's reads and writes over in turn, is one buffer.
func (p *Plan) overwrite() {
	var metas []Meta
	for si, s := range p.steps {
		ow, ok := s.n.kernel.(Overwriter)
		if !ok {
			continue
		}
		metas = metas[:0]
		for _, id := range s.in {
			m := Meta{}
			if id >= 0 {
				m = p.vals[id].meta
			}
			metas = append(metas, m)
		}
		for i, id := range s.out {
			j, ok := ow.Overwrites(i, metas)
			if !ok || id < 0 || j >= len(s.in) || s.in[j] < 0 || p.vals[id].st != stWork {
				continue
			}
			b := s.in[j]
			for p.vals[b].st == stView { // a view of an output written over: two steps
				b = p.vals[b].base
			}
			base, v := &p.vals[b], &p.vals[id]
			if base.st != stWork || base.last != si || base.size != v.size || base.meta.Type != v.meta.Type || base.blocked != v.blocked || p.readsElsewhere(s, j, b) {
				continue
			}
			v.st, v.base, v.in = stView, b, j
			base.last = max(base.last, v.last) // v.last is its views' last read too
		}
	}
	for k := range p.vals { // the views of an output written over: of its base
		if w := &p.vals[k]; w.st == stView && p.vals[w.base].st == stView {
			w.base = p.vals[w.base].base
		}
	}
}

// readsElsewhere reports whether step s reads base b (or a view of it)
// through an input other than j: Conv(X) + X, whose X the output must not
// overwrite while the step reads it.
func (p *Plan) readsElsewhere(s pstep, j, b int) bool {
	for k, id := range s.in {
		if k == j || id < 0 {
			continue
		}
		for p.vals[id].st == stView {
			id = p.vals[id].base
		}
		if id == b {
			return true
		}
	}
	return false
}

// lifetimes is a static interval tree of the values' lifetimes [first,
// last] (a centered interval tree): each node holds the intervals that
// contain its center, sorted by first and by last, and the intervals wholly
// before and after it are in its subtrees.
type lifetimes struct {
	center        int
	byFirst       []int // ids, first ascending
	byLast        []int // ids, last descending
	before, after *lifetimes
	vals          []pval
}

func newLifetimes(vals []pval, ids []int) *lifetimes {
	if len(ids) == 0 {
		return nil
	}
	firsts := make([]int, len(ids))
	for i, id := range ids {
		firsts[i] = vals[id].first
	}
	sort.Ints(firsts)
	t := &lifetimes{center: firsts[len(firsts)/2], vals: vals} // the first of some interval: it holds one at least
	var before, after []int
	for _, id := range ids {
		switch v := vals[id]; {
		case v.last < t.center:
			before = append(before, id)
		case v.first > t.center:
			after = append(after, id)
		default:
			t.byFirst = append(t.byFirst, id)
		}
	}
	t.byLast = append([]int{}, t.byFirst...)
	sort.Slice(t.byFirst, func(a, b int) bool { return vals[t.byFirst[a]].first < vals[t.byFirst[b]].first })
	sort.Slice(t.byLast, func(a, b int) bool { return vals[t.byLast[a]].last > vals[t.byLast[b]].last })
	t.before, t.after = newLifetimes(vals, before), newLifetimes(vals, after)
	return t
}

// overlapping calls f with every id whose lifetime overlaps [first, last].
func (t *lifetimes) overlapping(first, last int, f func(id int)) {
	for t != nil {
		switch {
		case last < t.center: // only those that start by last
			for _, id := range t.byFirst {
				if t.vals[id].first > last {
					break
				}
				f(id)
			}
			t = t.before
		case first > t.center: // only those that end at first or later
			for _, id := range t.byLast {
				if t.vals[id].last < first {
					break
				}
				f(id)
			}
			t = t.after
		default: // all contain the center, which [first, last] does too
			for _, id := range t.byFirst {
				f(id)
			}
			t.before.overlapping(first, last, f)
			t = t.after
		}
	}
}

func align(n int) int { return (n + 63) &^ 63 }

// ProductFLOPs is the floating-point work of the plan's matrix products
// (Conv, ConvTranspose, Gemm, MatMul, fused or not): 2 per multiply-add, the compute floor of a run at
// the device's product rate. A convolution counts its direct form's
// multiply-adds, whatever the CPU computes (Winograd's F(2x2, 3x3) does
// 2.25 times fewer: ops_conv_winograd.go), so that rates compare across
// machines and kernels.
func (p *Plan) ProductFLOPs() float64 {
	var f float64
	for _, s := range p.steps {
		shape := func(i int) []int {
			if i >= len(s.in) || s.in[i] < 0 {
				return nil
			}
			return p.vals[s.in[i]].meta.Shape
		}
		var out []int
		if len(s.out) > 0 && s.out[0] >= 0 {
			out = p.vals[s.out[0]].meta.Shape
		}
		switch k := s.n.kernel.(type) {
		case *conv, *fusedConv, *nchwcConv:
			w := shape(1)
			if nc, ok := k.(*nchwcConv); ok && nc.layout.pool != nil && len(w) >= 2 { // the convolution's output, not its pooling's
				x, b := shape(0), shape(2)
				if geo, err := nc.conv.shapes(x, w, b, b != nil); err == nil {
					out = geo.outShape(x[0], w[0])
				}
			}
			if len(w) >= 2 && len(out) >= 2 {
				f += 2 * float64(numel(out)) * float64(numel(w[1:])) // each output: C/group x kernel products
			}
		case *matMul, *fusedMatMul:
			if ms, err := matMulShape(shape(0), shape(1)); err == nil {
				f += 2 * float64(numel(ms.batch)) * float64(ms.m) * float64(ms.n) * float64(ms.k)
			}
		case *convTranspose:
			// W is C x M/group x kernel: each input value times each of its
			// group's weights
			x, w := shape(0), shape(1)
			if len(x) >= 2 && len(w) >= 2 {
				f += 2 * float64(numel(x)) * float64(numel(w[1:]))
			}
		case *fusedAttention:
			if qk, pv, err := k.shapes(shape(0), shape(1), shape(4)); err == nil {
				f += 2 * float64(numel(qk.batch)) * float64(qk.m) * (float64(qk.n)*float64(qk.k) + float64(pv.n)*float64(pv.k))
			}
		case *gemmOp:
			if m, kk, n, err := k.shape(shape(0), shape(1), nil, false); err == nil {
				f += 2 * float64(m) * float64(n) * float64(kk)
			}
		case *fusedGemm:
			if m, kk, n, err := k.g.shape(shape(0), shape(1), nil, false); err == nil {
				f += 2 * float64(m) * float64(n) * float64(kk)
			}
		}
	}
	return f
}
