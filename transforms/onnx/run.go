package onnx

import (
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
	if st := p.pool.get(); st != nil {
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
// returns.
func (p *Plan) run(inputs, outputs []nd.Array, mem *memory) ([]nd.Array, error) {
	m := p.m
	st, err := p.state(mem)
	if err != nil {
		return nil, err
	}
	defer func() {
		st.release()
		p.pool.put(st)
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
				b := in[mustView(viewer, i)]
				arrays[id] = nd.Array{Type: v.meta.Type, Shape: v.meta.Shape, Data: b.Data}
			} else if viewer != nil {
				if j, ok := viewer.View(i); ok {
					copies = append(copies, [2]int{i, j})
				}
			}
			out[i] = arrays[id]
		}
		st.copies = copies
		if err := s.n.kernel.Run(in, out); err != nil {
			return nil, fmt.Errorf("%s: %w", s.n.label(), err)
		}
		for _, c := range copies {
			copy(out[c[0]].Data, in[c[1]].Data)
		}
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
		if want := m.Outputs[i].Type; want != a.Type {
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
	return func() string { return fmt.Sprintf("output %q", p.m.g.values[id].name) }
}

// workspaceWhat describes the workspace in errors, with its largest value.
func (p *Plan) workspaceWhat() string {
	v := p.vals[p.largest]
	return fmt.Sprintf("the run's workspace (its largest value: output %q %v%s of %d bytes)",
		p.m.g.values[p.largest].name, v.meta.Type, nd.ShapeString(v.meta.Shape), v.size)
}

func mustView(v Viewer, out int) int {
	j, _ := v.View(out)
	return j
}
