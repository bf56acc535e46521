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
	return p.run(inputs, mem)
}

func (p *Plan) run(inputs []nd.Array, mem *memory) ([]nd.Array, error) {
	m := p.m
	inputs, err := p.checkInputs(inputs, mem)
	if err != nil {
		return nil, err
	}
	var ws []byte
	if p.work > 0 {
		if w, ok := p.pool.Get().(*[]byte); ok {
			ws = *w
		} else if ws, err = mem.alloc(int64(p.work), p.vals[p.largest].by, p.workspaceWhat); err != nil {
			return nil, err
		}
		defer func() { p.pool.Put(&ws) }()
	}
	arrays := make([]nd.Array, len(p.vals))
	for i, id := range p.inputs {
		arrays[id] = inputs[i]
	}
	for i, v := range p.vals {
		switch v.st {
		case stConst:
			arrays[i] = *v.meta.Value
		case stWork:
			arrays[i] = nd.Array{Type: v.meta.Type, Shape: v.meta.Shape, Data: ws[v.off : v.off+v.size : v.off+v.size]}
		case stOutput:
			a, err := mem.array(v.meta.Type, v.meta.Shape, v.by, p.valueWhat(i))
			if err != nil {
				return nil, err
			}
			arrays[i] = a
		}
	}
	for _, s := range p.steps {
		in := make([]nd.Array, len(s.in))
		for i, id := range s.in {
			if id >= 0 {
				in[i] = arrays[id]
			}
		}
		out := make([]nd.Array, len(s.out))
		var copies [][2]int // outputs that the kernel views but that are graph outputs
		viewer, _ := s.n.kernel.(Viewer)
		for i, id := range s.out {
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
		if err := s.n.kernel.Run(in, out); err != nil {
			return nil, fmt.Errorf("%s: %w", s.n.label(), err)
		}
		for _, c := range copies {
			copy(out[c[0]].Data, in[c[1]].Data)
		}
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
