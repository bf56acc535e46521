package onnx

import (
	"errors"
	"fmt"
	"sort"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// Control flow (If, Loop, Scan) holds graphs in its attributes: If's
// then_branch and else_branch, Loop's and Scan's body. The loader builds
// each as a Model of its own (buildGraph, with the node's graph as its
// parent), before the node's kernel is made. A name a subgraph reads that
// it does not define is a value of a graph that encloses it (outer
// scope): it becomes an input of the subgraph's Model after the ones the
// subgraph declares, and an input of the node that holds the subgraph, so
// that sorting, folding, liveness and planning see that the node reads it.
// An initializer of an enclosing graph is the exception: the subgraph
// takes it as a constant of its own (the same array, as ONNX Runtime
// takes outer-scope initializers), so that a Loop's or Scan's body packs
// its weights once and folds what depends on them alone.
// A name defined nowhere is refused at load, naming the node and the
// value. Nested subgraphs work the same way: what an inner one reads from
// the outermost graph is an input of every node on the way.
//
// A kernel runs a subgraph with the runtime's own planner and run: the
// subgraph's Model plans itself for the shapes it is given and keeps the
// plans (Model.plan), and each run of it is a Plan's run.

// subgraph is a GRAPH attribute built.
type subgraph struct {
	m *Model
	// formal is how many inputs the graph declares; m.Inputs[formal:] are
	// the outer-scope values it reads (m.g.outer).
	formal int
	// outerAt[i] is where the node's inputs past its own hold the value
	// m.g.outer[i] (an index from the node's first outer input).
	outerAt []int
}

// maxSubgraphDepth bounds how deeply subgraphs nest: a model file is a
// tree of protobuf messages, and a hostile one could nest thousands.
const maxSubgraphDepth = 64

// buildGraphs builds the node's GRAPH attributes (for g, the graph that
// holds the node), for its New to take (graph).
func (a *Attrs) buildGraphs(opset int, g *graph) error {
	var names []string
	for name, p := range a.byName {
		if p.GetType() == onnxpb.AttributeProto_GRAPH || p.GetType() == onnxpb.AttributeProto_UNDEFINED && p.GetG() != nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	depth := 0
	for p := g; p != nil; p = p.parent {
		depth++
	}
	if depth > maxSubgraphDepth {
		return fmt.Errorf("subgraphs nest more than %d deep", maxSubgraphDepth)
	}
	sort.Strings(names)
	a.graphs = map[string]*subgraph{}
	for _, name := range names {
		gp := a.byName[name].GetG()
		if gp == nil {
			return fmt.Errorf("attribute %s holds no graph", name)
		}
		m := &Model{Opset: opset, Name: gp.GetName()}
		if err := buildGraph(m, gp, opset, g, g.mem, nil); err != nil {
			return fmt.Errorf("attribute %s (graph %q): %w", name, gp.GetName(), err)
		}
		a.graphs[name] = &subgraph{m: m, formal: len(m.Inputs) - len(m.g.outer)}
	}
	return nil
}

// graph returns the GRAPH attribute name, nil when the node does not set
// it.
func (a *Attrs) graph(name string) *subgraph {
	if a.get(name, onnxpb.AttributeProto_GRAPH) == nil {
		return nil
	}
	return a.graphs[name]
}

// outerNames returns the outer-scope values the node's subgraphs read,
// each once, in the order the node reads them after its own inputs, and
// points each subgraph's outerAt at them.
func (a *Attrs) outerNames() []string {
	var names []string
	at := map[string]int{}
	for _, name := range sortedKeys(a.graphs) {
		s := a.graphs[name]
		s.outerAt = make([]int, len(s.m.g.outer))
		for i, v := range s.m.g.outer {
			j, ok := at[v]
			if !ok {
				j = len(names)
				at[v] = j
				names = append(names, v)
			}
			s.outerAt[i] = j
		}
	}
	return names
}

func sortedKeys(m map[string]*subgraph) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// subValueInfo is valueInfo for a subgraph's inputs and outputs, which
// exporters often leave untyped (a Loop's carried values): a value without
// a type is of the type it is given (nd.Undefined here). A sequence of
// tensors is of its elements' type (the runtime holds it stacked). Shapes are not
// kept (a loop-carried value may change shape); types are, as the runtime
// holds them (Float16 as Float32).
func subValueInfo(vi *onnxpb.ValueInfoProto, what string) (ValueInfo, error) {
	info := ValueInfo{Name: vi.GetName()}
	if info.Name == "" {
		return info, fmt.Errorf("an %s has no name", what)
	}
	t := vi.GetType()
	if t == nil || t.Value == nil {
		return info, nil
	}
	tt := t.GetTensorType()
	if st := t.GetSequenceType(); st != nil && st.GetElemType().GetTensorType() != nil {
		tt = st.GetElemType().GetTensorType() // a sequence of tensors: held stacked (ops_sequence.go)
	}
	if tt == nil {
		return info, fmt.Errorf("%s %q is neither a tensor nor a sequence of tensors (maps and optionals are not supported)", what, info.Name)
	}
	if tt.GetElemType() == 0 {
		return info, nil
	}
	info.Type = nd.DType(tt.GetElemType())
	if !info.Type.Supported() {
		name := onnxpb.TensorProto_DataType_name[tt.GetElemType()]
		return info, fmt.Errorf("%s %q: element type %s is not supported", what, info.Name, name)
	}
	info.Type = internal(info.Type)
	return info, nil
}

// defines reports whether name is a value of g or of a graph enclosing it.
func (g *graph) defines(name string) bool {
	if g.scope == nil {
		g.scope = map[string]bool{}
		for _, t := range g.proto.GetInitializer() {
			g.scope[t.GetName()] = true
		}
		for _, v := range g.proto.GetInput() {
			g.scope[v.GetName()] = true
		}
		for _, n := range g.proto.GetNode() {
			for _, o := range n.Output {
				if o != "" {
					g.scope[o] = true
				}
			}
		}
	}
	return g.scope[name] || g.parent != nil && g.parent.defines(name)
}

// initializer returns the initializer name of the nearest graph, g or one
// enclosing it, that defines name; nil where that graph defines it
// otherwise (an input, a node's output). The graphs are still being built:
// their initializers are read, their nodes not yet folded.
func (g *graph) initializer(name string) *nd.Array {
	for p := g; p != nil; p = p.parent {
		if p.defines(name); !p.scope[name] {
			continue
		}
		if id, ok := p.byName[name]; ok && p.values[id].init != nil && p.values[id].input < 0 {
			return p.values[id].init
		}
		return nil
	}
	return nil
}

// outerValue makes name, which subgraph g reads and does not define, an
// outer-scope input of m (g's Model), ok false when no enclosing graph
// defines it; an initializer of an enclosing graph becomes a constant of
// g instead.
func (g *graph) outerValue(m *Model, name string) (int, bool) {
	if g.parent == nil || !g.parent.defines(name) {
		return 0, false
	}
	if c := g.parent.initializer(name); c != nil {
		// A constant there is one here too (the same array): the
		// subgraph's kernels take it as one (a MatMul packs its weights
		// once, not in every iteration) and folding reaches it.
		return g.add(&value{name: name, typ: c.Type, init: c, input: -1}), true
	}
	id := g.add(&value{name: name, input: len(m.Inputs)})
	g.inputs = append(g.inputs, id)
	g.outer = append(g.outer, name)
	m.Inputs = append(m.Inputs, ValueInfo{Name: name})
	return id, true
}

// scopeWords completes the error of an undefined input: where else the
// loader looked.
func (g *graph) scopeWords() string {
	if g.parent != nil {
		return " in this subgraph or a graph that encloses it"
	}
	return ""
}

// inputs returns the subgraph's inputs: its own (formal), then the outer
// values it reads, taken from the node's inputs past its own (outer).
func subInputs[T any](s *subgraph, formal []T, outer []T) []T {
	in := make([]T, 0, len(s.m.Inputs))
	in = append(in, formal...)
	for _, j := range s.outerAt {
		in = append(in, outer[j])
	}
	return in
}

// infer plans the subgraph for inputs of in's types and shapes (the
// contents known where in has them) and returns its outputs' Metas. Where
// the plan needs contents that in does not have, or a node of the
// subgraph gives shapes only its data decides, the error is
// ShapeFromData().
func (s *subgraph) infer(in []Meta) ([]Meta, error) {
	if len(in) != len(s.m.Inputs) {
		return nil, fmt.Errorf("graph %q: %d inputs for %d", s.m.Name, len(in), len(s.m.Inputs))
	}
	metas := make([]Meta, len(in))
	inputs := make([]nd.Array, len(in))
	keyed := make([]bool, len(in))
	for i, mt := range in {
		if want := s.m.Inputs[i].Type; want != nd.Undefined && mt.Type != want {
			return nil, fmt.Errorf("graph %q: input %q is %v, the graph declares %v", s.m.Name, s.m.Inputs[i].Name, mt.Type, want)
		}
		metas[i] = Meta{Type: mt.Type, Shape: mt.Shape}
		if mt.Value != nil {
			inputs[i], keyed[i] = *mt.Value, true
		}
	}
	mem, err := newMemory(0)
	if err != nil {
		return nil, err
	}
	p, more, err := s.m.newPlan(0, s.m.g.inputs, metas, inputs, keyed, nil, mem)
	switch {
	case errors.Is(err, errShapeFromData):
		return nil, ShapeFromData()
	case err != nil:
		return nil, fmt.Errorf("graph %q: %w", s.m.Name, err)
	case more >= 0 || p.stop != nil: // contents not known, or a plan that ends at a node shaped by the data
		return nil, ShapeFromData()
	}
	out, err := p.OutputMeta()
	if err != nil {
		return nil, err
	}
	for i, o := range out {
		if want := s.m.Outputs[i].Type; want != nd.Undefined && o.Type != want {
			return nil, fmt.Errorf("graph %q: output %q is %v, the graph declares %v", s.m.Name, s.m.Outputs[i].Name, o.Type, want)
		}
	}
	return out, nil
}

// run runs the subgraph on in (its inputs, outer values last), its plan
// made for their shapes on first use and kept, its allocations within
// mem's budget.
func (s *subgraph) run(in []nd.Array, mem *memory) ([]nd.Array, error) {
	p, err := s.m.plan(in, mem.budget)
	if err != nil {
		return nil, fmt.Errorf("graph %q: %w", s.m.Name, err)
	}
	out, err := p.run(in, nil, mem)
	if err != nil {
		return nil, fmt.Errorf("graph %q: %w", s.m.Name, err)
	}
	return out, nil
}

// bytesOf is the size of arrays' data.
func bytesOf(arrays ...nd.Array) int64 {
	var n int64
	for _, a := range arrays {
		n += int64(len(a.Data))
	}
	return n
}

// copyInto copies src into dst, an output of the shape planned: a
// subgraph's result of another shape is an error naming the output.
func copyInto(dst, src nd.Array, what string) error {
	if dst.Type != src.Type || !nd.SameShape(dst.Shape, src.Shape) {
		return fmt.Errorf("%s is %v%s, the plan is for %v%s", what, src.Type, nd.ShapeString(src.Shape), dst.Type, nd.ShapeString(dst.Shape))
	}
	copy(dst.Data, src.Data)
	return nil
}

// boolScalar reads a condition: a bool tensor of one element.
func boolScalar(a nd.Array, what string) (bool, error) {
	if a.Type != nd.Bool || a.Len() != 1 {
		return false, fmt.Errorf("%s is %v%s, want a bool of one element", what, a.Type, nd.ShapeString(a.Shape))
	}
	return a.Data[0] != 0, nil
}

// wantedOutputs marks the outputs node n gives (not left out).
func wantedOutputs(n *Node) []bool {
	w := make([]bool, len(n.Outputs))
	for i := range w {
		w[i] = n.HasOutput(i)
	}
	return w
}
