package onnx

import (
	"fmt"
	"runtime"
	"slices"
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
	if err := p.inputsFit(inputs); err != nil {
		return err
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

// inputsFit checks inputs against the plan's (a Float16 or BFloat16 one
// where the plan takes float32, as checkInputsInto converts it), before
// the run takes its state: inputs that do not fit make no workspace.
func (p *Plan) inputsFit(inputs []nd.Array) error {
	if len(inputs) != len(p.inputs) {
		return fmt.Errorf("%d inputs for a model of %d", len(inputs), len(p.inputs))
	}
	for i, id := range p.inputs {
		a, want := inputs[i], p.vals[id].meta
		typ := a.Type
		if typ == nd.Float16 || typ == nd.BFloat16 {
			typ = nd.Float32
		}
		if typ != want.Type || !nd.SameShape(a.Shape, want.Shape) {
			return fmt.Errorf("input %q is %v, the plan is for %v", p.m.Inputs[i].Name, a, want)
		}
	}
	return nil
}

// idleStates are a model's run states not in use, of all its plans.
// Unlike a sync.Pool's they are kept through garbage collections: a
// plan's workspace is made once per concurrent run, not again after
// every collection (a pipeline's worker collects often). But a model has
// up to maxPlans plans (a pipeline's adaptive batches make one per batch
// size), each with a workspace, so the idle ones are kept to a total of
// bytes, the least recently used given up first: at most
// max(idleFloor, GOMAXPROCS x the largest workspace), what runs on every
// core at once hold anyway.
type idleStates struct {
	mu sync.Mutex
	// idle are the states, most recently used last; bytes their
	// workspaces' total, largest the largest workspace put.
	idle    []idleState
	bytes   int64
	largest int64
	cap     func() int64 // the bound (idleCap; a test's)
	dropped int          // states given up (tested)
}

type idleState struct {
	p  *Plan
	st *runState
}

// idleFloor is the bytes of idle workspaces a model may keep whatever
// its workspaces' sizes.
const idleFloor = 64 << 20

// idleCap is the bound of a model's idle workspaces, largest the largest
// of its workspaces.
func idleCap(largest int64) int64 {
	return max(idleFloor, int64(runtime.GOMAXPROCS(0))*largest)
}

// get returns an idle state of p, or nil.
func (s *idleStates) get(p *Plan) *runState {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.idle) - 1; i >= 0; i-- {
		if e := s.idle[i]; e.p == p {
			s.idle = slices.Delete(s.idle, i, i+1)
			s.bytes -= int64(len(e.st.ws))
			return e.st
		}
	}
	return nil
}

// put makes st, a state of p, idle, and gives up the least recently used
// states (st last) while the idle ones are over the bound.
func (s *idleStates) put(p *Plan, st *runState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int64(len(st.ws))
	s.largest = max(s.largest, n)
	limit := idleCap(s.largest)
	if s.cap != nil {
		limit = s.cap()
	}
	s.idle = append(s.idle, idleState{p, st})
	s.bytes += n
	drop := 0
	for s.bytes > limit && drop < len(s.idle) {
		s.bytes -= int64(len(s.idle[drop].st.ws))
		drop++
	}
	if drop > 0 {
		s.dropped += drop
		clear(s.idle[:drop])
		s.idle = slices.Delete(s.idle, 0, drop)
	}
}
