package onnx

import (
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// fuseSteps says whether plans fuse a Conv with the Add and the activation
// that alone read it (a variable for the tests, which compare fused plans
// with unfused ones).
var fuseSteps = true

// fuse makes each float32 Conv whose output is read by one step only, an
// Add of a residual of the same shape or an activation (a one-input
// operator, or Clip with bounds known before the run), one step with that
// reader, and that Add's output the same way with an activation after it:
// Conv -> Add -> Relu (ResNet's blocks), Conv -> Add (MobileNet's), Conv
// -> Clip, HardSwish, Relu, Sigmoid (every CNN's). The fused step takes
// the place of the last one it replaces, where all its inputs exist; the
// values between the fused steps are no longer made (nor placed in the
// workspace). The graph and its outputs are the same; a run computes each
// fused value once, in cache, instead of in passes of its own. It runs
// before place, for the CPU and the device alike.
func (p *Plan) fuse() {
	if !fuseSteps {
		return
	}
	readers := make([]int, len(p.vals))
	readBy := make([]int, len(p.vals)) // the step that reads a value (the last one)
	for si, s := range p.steps {
		for _, id := range s.in {
			if id >= 0 {
				readers[id]++
				readBy[id] = si
			}
		}
	}
	for _, o := range p.outputs {
		readers[o] += 2 // a graph output stays
	}
	// only is the step that alone reads value id (and is not fused yet), or -1.
	gone := make([]bool, len(p.steps))
	only := func(id int) int {
		if id < 0 || readers[id] != 1 || p.vals[id].meta.Type != nd.Float32 || gone[readBy[id]] {
			return -1
		}
		return readBy[id]
	}
	fused := 0
	for si := range p.steps {
		s := p.steps[si]
		c, ok := s.n.kernel.(*conv)
		if !ok || gone[si] || len(s.out) != 1 || s.out[0] < 0 {
			continue
		}
		y := s.out[0]
		if p.vals[y].meta.Type != nd.Float32 {
			continue
		}
		ep := &epilogue{}
		members, z := []int{si}, -1
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
		}
		if len(members) == 1 {
			continue
		}
		in := []int{s.in[0], s.in[1], -1, z}
		if len(s.in) > 2 {
			in[2] = s.in[2]
		}
		n := &node{Node: s.n.Node, kernel: &fusedConv{conv: c, ep: ep}}
		n.Op = ep.label()
		n.Outputs = []string{p.m.g.values[y].name}
		last := members[len(members)-1]
		for _, st := range members[:len(members)-1] {
			gone[st] = true
		}
		p.steps[last] = pstep{n: n, in: in, out: []int{y}}
		fused++
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
