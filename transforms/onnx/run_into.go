package onnx

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// RunInto is Run into the caller's arrays: outputs[i] must have the type
// the model declares for its output i and the plan's shape for it
// (OutputMeta's, as nd.Array.Validate holds), and must not share memory
// with the inputs; the run overwrites them. Where a pipeline reuses its
// output arrays, a run after the plan's first allocates nothing: the
// workspace, the lists of every step, the kernels' scratch and the
// goroutines that share the work are the plan's, kept between runs
// (TestRunIntoAllocs holds the exported models to zero allocations a run).
// It is safe for concurrent use with other runs of the plan that write
// other outputs.
func (p *Plan) RunInto(inputs, outputs []nd.Array) error {
	if err := p.shapesFromData(); err != nil { // Run makes such outputs
		return fmt.Errorf("RunInto: %w", err)
	}
	if err := p.checkOutputs(outputs); err != nil {
		return err
	}
	mem := memories.Get().(*memory) // the run's methods keep it: from a pool, not the heap each run
	*mem = lazyMemory()
	_, err := p.run(inputs, outputs, mem)
	*mem = memory{}
	memories.Put(mem)
	return err
}

// memories are RunInto's memory records.
var memories = sync.Pool{New: func() any { return new(memory) }}

// checkOutputs checks the caller's outputs of RunInto against the plan.
func (p *Plan) checkOutputs(outputs []nd.Array) error {
	if len(outputs) != len(p.outputs) {
		return fmt.Errorf("%d outputs for a model of %d", len(outputs), len(p.outputs))
	}
	for i, id := range p.outputs {
		o, want, shape := outputs[i], p.m.Outputs[i].Type, p.vals[id].meta.Shape
		if o.Type != want || !nd.SameShape(o.Shape, shape) {
			return fmt.Errorf("output %q is %v, the plan's is %v%s", p.m.Outputs[i].Name, o, want, nd.ShapeString(shape))
		}
		if err := o.Validate(); err != nil {
			return fmt.Errorf("output %q: %w", p.m.Outputs[i].Name, err)
		}
	}
	return nil
}

// placeOutputs makes the caller's outputs the arrays of the values the
// steps write as outputs, where the types agree; an output the model
// declares Float16 or BFloat16 is computed in a float32 array of the run
// state's, and narrowed into the caller's by finishOutputs.
func (p *Plan) placeOutputs(st *runState, arrays, outputs []nd.Array, mem *memory) error {
	for i, id := range p.outputs {
		v := p.vals[id]
		if v.st != stOutput || arrays[id].Data != nil { // not written by a step, or listed twice
			continue
		}
		if outputs[i].Type == v.meta.Type {
			arrays[id] = nd.Array{Type: v.meta.Type, Shape: v.meta.Shape, Data: outputs[i].Data}
			continue
		}
		if st.narrow == nil {
			st.narrow = make([]nd.Array, len(p.outputs))
		}
		if st.narrow[i].Data == nil {
			a, err := mem.array(v.meta.Type, v.meta.Shape, v.by, p.valueWhat(id))
			if err != nil {
				return err
			}
			st.narrow[i] = a
		}
		arrays[id] = st.narrow[i]
	}
	return nil
}

// finishOutputs writes into the caller's outputs what the steps did not
// write there: constants, inputs and views, values listed twice, and the
// outputs narrowed to Float16 or BFloat16.
func (p *Plan) finishOutputs(arrays, outputs []nd.Array) {
	for i, id := range p.outputs {
		a, o := arrays[id], outputs[i]
		if len(o.Data) == 0 || unsafe.SliceData(a.Data) == unsafe.SliceData(o.Data) {
			continue
		}
		nd.ConvertInto(o, a) // a copy where the types agree
	}
}

// checkInputsInto checks inputs against the plan's and writes them into
// dst (len(p.inputs)), each Float16 or BFloat16 one as the float32 array
// the plan takes (allocated from mem).
func (p *Plan) checkInputsInto(dst, inputs []nd.Array, mem *memory) error {
	if len(inputs) != len(p.inputs) {
		return fmt.Errorf("%d inputs for a model of %d", len(inputs), len(p.inputs))
	}
	for i, id := range p.inputs {
		a := inputs[i]
		if want := p.vals[id].meta; a.Type != want.Type || !nd.SameShape(a.Shape, want.Shape) {
			if a.Type == nd.Float16 || a.Type == nd.BFloat16 {
				var err error
				name := p.m.Inputs[i].Name
				if a, err = mem.convert(a, nd.Float32, nil, func() string { return fmt.Sprintf("input %q as float32", name) }); err != nil {
					return err
				}
			}
			if a.Type != want.Type || !nd.SameShape(a.Shape, want.Shape) {
				return fmt.Errorf("input %q is %v, the plan is for %v", p.m.Inputs[i].Name, a, want)
			}
		}
		dst[i] = a
	}
	return nil
}

// runStates are a plan's run states not in use. Unlike a sync.Pool's,
// they are kept through garbage collections: a plan's workspace is made
// once per concurrent run, not again after every collection (a pipeline's
// worker collects often). A plan holds as many as it has run at once, and
// goes with them when its model drops it.
type runStates struct {
	mu   sync.Mutex
	idle []*runState
}

// get returns an idle state, or nil.
func (s *runStates) get() *runState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.idle) == 0 {
		return nil
	}
	st := s.idle[len(s.idle)-1]
	s.idle = s.idle[:len(s.idle)-1]
	return st
}

// put makes st idle.
func (s *runStates) put(st *runState) {
	s.mu.Lock()
	s.idle = append(s.idle, st)
	s.mu.Unlock()
}
