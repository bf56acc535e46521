package onnx

import (
	"errors"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Run runs the model on the CPU: inputs in the order of m.Inputs, outputs
// in the order of m.Outputs (new arrays, the caller's). The plan for the
// inputs' shapes is made on first use and kept.
func (m *Model) Run(inputs []nd.Array) ([]nd.Array, error) {
	return m.RunWith(inputs, RunOptions{})
}

// RunWith is Run with options: its memory budget.
func (m *Model) RunWith(inputs []nd.Array, opts RunOptions) ([]nd.Array, error) {
	p, err := m.plan(inputs, opts.MemoryBudget)
	if err != nil {
		return nil, err
	}
	return p.RunWith(inputs, opts)
}

// Run computes the plan's model on inputs of its shapes, on the CPU. It is
// safe for concurrent use: each run has a workspace of its own (pooled).
func (p *Plan) Run(inputs []nd.Array) ([]nd.Array, error) {
	return p.RunWith(inputs, RunOptions{})
}

// RunWith is Run with options: its memory budget, which the run's
// workspace (where a pooled one is not reused) and its outputs must fit,
// checked before they are allocated.
func (p *Plan) RunWith(inputs []nd.Array, opts RunOptions) ([]nd.Array, error) {
	mem, err := newMemory(opts.MemoryBudget)
	if err != nil {
		return nil, err
	}
	mem.ctx = opts.Context
	return p.run(inputs, nil, mem)
}

// runState is what a run uses besides its outputs, kept for the plan's
// next runs (pooled): the workspace, every value's array, and each step's
// input and output lists, so that a run makes none of them again.
type runState struct {
	ws      []byte
	arrays  []nd.Array
	in, out [][]nd.Array
	lists   []nd.Array // in's and out's backing
	copies  [][2]int
	inputs  []nd.Array // the run's inputs, checked (checkInputsInto)
	// narrow holds, for RunInto, the float32 value of each output the
	// model declares Float16 or BFloat16 (nil for the others), made on
	// first use.
	narrow []nd.Array
}

// release drops what a run's state refers to beyond the plan's own
// memory (the caller's inputs and outputs), so that a pooled state holds
// none of them.
func (st *runState) release() {
	clear(st.arrays)
	clear(st.lists)
	clear(st.inputs)
}

// state returns a run state of the plan: a pooled one, or one made now
// (its workspace within mem's budget).
func (p *Plan) state(mem *memory) (*runState, error) {
	if st := p.m.states.get(p); st != nil {
		return st, nil
	}
	st := &runState{arrays: make([]nd.Array, len(p.vals)), in: make([][]nd.Array, len(p.steps)), out: make([][]nd.Array, len(p.steps)),
		inputs: make([]nd.Array, len(p.inputs))}
	var n int
	for _, s := range p.steps {
		n += len(s.in) + len(s.out)
	}
	lists := make([]nd.Array, n)
	st.lists = lists
	for i, s := range p.steps {
		st.in[i], lists = lists[:len(s.in):len(s.in)], lists[len(s.in):]
		st.out[i], lists = lists[:len(s.out):len(s.out)], lists[len(s.out):]
	}
	if p.work > 0 {
		var err error
		if st.ws, err = mem.alloc(int64(p.work), p.vals[p.largest].by, p.workspaceWhat); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// run runs the plan on inputs into outputs, the caller's (RunInto:
// checkOutputs's), or, where outputs is nil, into new arrays, which it
// returns; a plan that ends early goes on by handOn (into new arrays).
func (p *Plan) run(inputs, outputs []nd.Array, mem *memory) ([]nd.Array, error) {
	outs, err := p.exec(inputs, outputs, mem)
	if err != nil || p.stop == nil {
		return outs, err
	}
	return p.handOn(outs, mem, func(q *Plan, in []nd.Array) ([]nd.Array, error) { return q.exec(in, nil, mem) }, nil)
}

// exec runs the plan's steps on inputs: run without going on where the
// plan ends early (it returns the values it hands on).
func (p *Plan) exec(inputs, outputs []nd.Array, mem *memory) ([]nd.Array, error) {
	m := p.m
	if err := p.inputsFit(inputs); err != nil { // before the state: no workspace for inputs that do not fit
		return nil, err
	}
	st, err := p.state(mem)
	if err != nil {
		return nil, err
	}
	defer func() {
		st.release()
		p.m.states.put(p, st)
	}()
	if err := p.checkInputsInto(st.inputs, inputs, mem); err != nil {
		return nil, err
	}
	arrays, ws := st.arrays, st.ws
	for i, id := range p.inputs {
		arrays[id] = st.inputs[i]
	}
	for i, v := range p.vals {
		switch v.st {
		case stConst:
			arrays[i] = *v.meta.Value
		case stWork:
			arrays[i] = nd.Array{Type: v.meta.Type, Shape: v.meta.Shape, Data: ws[v.off : v.off+v.size : v.off+v.size]}
		case stOutput:
			if outputs != nil {
				continue // below
			}
			a, err := mem.array(v.meta.Type, v.meta.Shape, v.by, p.valueWhat(i))
			if err != nil {
				return nil, err
			}
			arrays[i] = a
		}
	}
	if outputs != nil {
		if err := p.placeOutputs(st, arrays, outputs, mem); err != nil {
			return nil, err
		}
	}
	for si, s := range p.steps {
		in, out := st.in[si], st.out[si]
		for i, id := range s.in {
			in[i] = nd.Array{}
			if id >= 0 {
				in[i] = arrays[id]
			}
		}
		copies := st.copies[:0] // outputs that the kernel views but that are graph outputs
		viewer, _ := s.n.kernel.(Viewer)
		for i, id := range s.out {
			out[i] = nd.Array{}
			if id < 0 {
				continue
			}
			v := p.vals[id]
			if v.st == stView {
				b := in[v.in]
				arrays[id] = nd.Array{Type: v.meta.Type, Shape: v.meta.Shape, Data: b.Data}
			} else if viewer != nil {
				if j, ok := viewer.View(i); ok {
					copies = append(copies, [2]int{i, j})
				}
			}
			out[i] = arrays[id]
		}
		st.copies = copies
		if err := mem.stopped(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.n.label(), err)
		}
		if err := runKernel(s.n.kernel, mem, in, out); err != nil {
			return nil, fmt.Errorf("%s: %w", s.n.label(), err)
		}
		for _, c := range copies {
			copy(out[c[0]].Data, in[c[1]].Data)
		}
	}
	if p.stop != nil { // values handed on, the run's own
		outs := make([]nd.Array, len(p.outputs))
		for i, id := range p.outputs {
			outs[i] = arrays[id]
		}
		return outs, nil
	}
	if outputs != nil {
		p.finishOutputs(arrays, outputs)
		return outputs, nil
	}
	outs := make([]nd.Array, len(p.outputs))
	for i, id := range p.outputs {
		a := arrays[id]
		v := p.vals[id]
		if v.st != stOutput { // a constant, an input or a view: the caller's own copy
			if a, err = mem.clone(a, v.by, p.valueWhat(id)); err != nil {
				return nil, err
			}
		}
		if want := m.Outputs[i].Type; want != a.Type && want != nd.Undefined { // Undefined: a subgraph's untyped output
			if internal(want) != a.Type {
				return nil, fmt.Errorf("output %q is %v, the model declares %v", m.Outputs[i].Name, a.Type, want)
			}
			// Float32 rounded to the Float16 or BFloat16 declared
			if a, err = mem.convert(a, want, v.by, p.valueWhat(id)); err != nil {
				return nil, err
			}
		}
		outs[i] = a
	}
	return outs, nil
}

// valueWhat names value id in errors: `output "y"`.
func (p *Plan) valueWhat(id int) func() string {
	return func() string { return fmt.Sprintf("output %q", p.valueName(id)) }
}

// workspaceWhat describes the workspace in errors, with its largest value.
func (p *Plan) workspaceWhat() string {
	v := p.vals[p.largest]
	return fmt.Sprintf("the run's workspace (its largest value: output %q %v%s of %d bytes)",
		p.valueName(p.largest), v.meta.Type, nd.ShapeString(v.meta.Shape), v.size)
}

// handOn goes on from a plan that ends early: given its outputs (the values
// the rest reads), it computes the node it stops at where that node's
// shapes come from the data (RunShaped), plans the rest for the shapes
// (and the contents it reads as shapes) of the values it takes, and runs it
// by exec (the CPU's or the device's). shaped, if not nil, is told of each
// node computed between plans.
func (p *Plan) handOn(outs []nd.Array, mem *memory, exec func(q *Plan, in []nd.Array) ([]nd.Array, error), shaped func(n *node)) ([]nd.Array, error) {
	vals := make(map[int]nd.Array, len(p.outputs)+len(p.stop.out))
	for i, id := range p.outputs {
		vals[id] = outs[i]
	}
	n := p.stop
	if p.shaped {
		if shaped != nil {
			shaped(n)
		}
		in := make([]nd.Array, len(n.in))
		for i, id := range n.in {
			switch a, ok := vals[id]; {
			case id < 0:
			case ok:
				in[i] = a
			default: // known while planning, or an initializer
				in[i] = *p.vals[id].meta.Value
			}
		}
		if err := mem.stopped(); err != nil {
			return nil, fmt.Errorf("%s: %w", n.label(), err)
		}
		alloc := func(t nd.DType, shape []int) (nd.Array, error) {
			return mem.array(t, shape, n, func() string { return "an output" })
		}
		var res []nd.Array
		var err error
		if ns, ok := n.kernel.(nestedShaped); ok {
			res, err = ns.runShapedIn(mem, in, alloc)
		} else {
			res, err = n.kernel.(DataShaped).RunShaped(in, alloc)
		}
		if err != nil {
			var me *MemoryError
			if errors.As(err, &me) {
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w", n.label(), err)
		}
		if len(res) != len(n.out) {
			return nil, fmt.Errorf("%s: computed %d outputs, the node has %d", n.label(), len(res), len(n.out))
		}
		for i, id := range n.out {
			if id >= 0 {
				vals[id] = res[i]
			}
		}
	}
	next := make([]nd.Array, len(p.restIn))
	metas := make([]Meta, len(p.restIn))
	for i, id := range p.restIn {
		next[i] = vals[id]
		metas[i] = Meta{Type: next[i].Type, Shape: next[i].Shape}
	}
	from := p.stopAt
	if p.shaped {
		from++
	}
	q, err := p.rest.get(metas, next, mem.budget, func(keyed []bool, pm *memory) (*Plan, int, error) {
		return p.m.newPlan(from, p.restIn, metas, next, keyed, p.known, pm)
	})
	if err != nil {
		return nil, err
	}
	res, err := exec(q, next)
	if err != nil || q.stop == nil {
		return res, err
	}
	return q.handOn(res, mem, exec, shaped)
}
