package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// If runs one of two subgraphs, then_branch or else_branch, as its
// condition says; both read outer-scope values (subgraph.go). Planning
// plans the branches with the runtime's planner: a condition known before
// the run (a constant, or computed from shapes) plans the branch it picks
// alone, and the node's outputs are that branch's (folded where they are
// known); a condition from data plans both, and where they give the same
// types and shapes the outputs are of those, else they depend on the data
// (DataShaped). Versions 13, 16 and 19 added sequence, optional and
// float8 outputs, which the runtime does not hold: a branch that gives one
// is refused at load. On the GPU executor the node runs on the host (its
// branch's plan on the CPU, inside the device run).

func init() {
	RegisterOp(OpDef{Name: "If", Versions: []int{1, 11, 13, 16, 19}, New: newIf})
}

type ifOp struct {
	// nIn is the node's own inputs (the condition); the outer values its
	// branches read follow.
	nIn             int
	then, otherwise *subgraph
	// wanted marks the outputs the node gives (not left out).
	wanted []bool
}

func newIf(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 1, 1, 1<<30); err != nil {
		return nil, err
	}
	k := &ifOp{nIn: len(n.Inputs), then: n.Attrs.graph("then_branch"), otherwise: n.Attrs.graph("else_branch")}
	k.wanted = wantedOutputs(n)
	for _, b := range []struct {
		name string
		g    *subgraph
	}{{"then_branch", k.then}, {"else_branch", k.otherwise}} {
		switch {
		case b.g == nil:
			return nil, fmt.Errorf("attribute %s (a graph) is required", b.name)
		case b.g.formal != 0:
			return nil, fmt.Errorf("attribute %s: the branch declares %d inputs, a branch takes none", b.name, b.g.formal)
		case len(b.g.m.Outputs) != len(n.Outputs):
			return nil, fmt.Errorf("attribute %s: the branch gives %d outputs for the node's %d", b.name, len(b.g.m.Outputs), len(n.Outputs))
		}
	}
	return k, nil
}

func (k *ifOp) branch(cond bool) *subgraph {
	if cond {
		return k.then
	}
	return k.otherwise
}

func (k *ifOp) Infer(in []Meta) ([]Meta, error) {
	c := in[0]
	if c.Type != nd.Bool || numel(c.Shape) != 1 {
		return nil, fmt.Errorf("the condition is %v, want a bool of one element", c)
	}
	if c.Value != nil {
		cond, err := boolScalar(*c.Value, "the condition")
		if err != nil {
			return nil, err
		}
		b := k.branch(cond)
		return b.infer(subInputs(b, nil, in[k.nIn:]))
	}
	then, err := k.then.infer(subInputs(k.then, nil, in[k.nIn:]))
	if err != nil {
		return nil, err
	}
	otherwise, err := k.otherwise.infer(subInputs(k.otherwise, nil, in[k.nIn:]))
	if err != nil {
		return nil, err
	}
	out := make([]Meta, len(then))
	data := false
	for i := range then {
		t, e := then[i], otherwise[i]
		if t.Type != e.Type {
			return nil, fmt.Errorf("output %d is %v in then_branch and %v in else_branch", i, t.Type, e.Type)
		}
		data = data || !nd.SameShape(t.Shape, e.Shape)
		out[i] = Meta{Type: t.Type, Shape: t.Shape}
	}
	if data {
		return nil, ShapeFromData()
	}
	return out, nil
}

// runBranch runs the branch the condition picks.
func (k *ifOp) runBranch(in []nd.Array, mem *memory) ([]nd.Array, error) {
	cond, err := boolScalar(in[0], "the condition")
	if err != nil {
		return nil, err
	}
	b := k.branch(cond)
	return b.run(subInputs(b, nil, in[k.nIn:]), mem)
}

func (k *ifOp) Run(in, out []nd.Array) error {
	mem, err := newMemory(0)
	if err != nil {
		return err
	}
	return k.runIn(mem, in, out)
}

// runIn is Run within a run's memory (its budget, its context).
func (k *ifOp) runIn(mem *memory, in, out []nd.Array) error {
	res, err := k.runBranch(in, mem)
	if err != nil {
		return err
	}
	for i, o := range out {
		if o.Type == nd.Undefined {
			continue // left out
		}
		if err := copyInto(o, res[i], fmt.Sprintf("output %d", i)); err != nil {
			return err
		}
	}
	return nil
}

func (k *ifOp) RunShaped(in []nd.Array, alloc func(t nd.DType, shape []int) (nd.Array, error)) ([]nd.Array, error) {
	mem, err := newMemory(0)
	if err != nil {
		return nil, err
	}
	return k.runShapedIn(mem, in, alloc)
}

// runShapedIn is RunShaped within a run's memory (its budget, its context).
func (k *ifOp) runShapedIn(mem *memory, in []nd.Array, alloc func(t nd.DType, shape []int) (nd.Array, error)) ([]nd.Array, error) {
	res, err := k.runBranch(in, mem)
	if err != nil {
		return nil, err
	}
	out := make([]nd.Array, len(res))
	for i, r := range res {
		if !k.wanted[i] {
			continue
		}
		if out[i], err = alloc(r.Type, r.Shape); err != nil {
			return nil, err
		}
		copy(out[i].Data, r.Data)
	}
	return out, nil
}
