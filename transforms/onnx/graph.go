package onnx

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// graph is a model's graph: values (each produced once) and nodes in an
// order where every node comes after the nodes whose outputs it reads.
type graph struct {
	values  []*value
	byName  map[string]int
	nodes   []*node
	inputs  []int // the values a caller feeds, in order
	outputs []int
	// proto, parent, mem and scope serve subgraphs (subgraph.go): the
	// graph's proto, the graph of the node that holds it (nil for a
	// model's main graph), the load's memory, and the names this graph
	// and those that enclose it define (made on first use). outer are the
	// names a subgraph reads from the graphs that enclose it.
	proto  *onnxpb.GraphProto
	parent *graph
	mem    *memory
	scope  map[string]bool
	outer  []string
}

type value struct {
	name string
	// typ is the internal element type (Float16 and BFloat16 widened).
	typ nd.DType
	// init is the value's contents when known at load: an initializer, or
	// the output of a node folded at load.
	init *nd.Array
	// input is the index in graph.inputs of a value the caller feeds, or -1.
	input int
	// quant is, for a value folded at load from a DequantizeLinear of
	// constants (a QDQ model's weights), its quantized form, for the plan's
	// integer products (plan_fuse_quant.go); nil otherwise.
	quant *quantized
}

type node struct {
	Node
	kernel  Kernel
	in, out []int // value indices; -1 for a left-out input or output
}

// label names a node in errors: "node "conv1" (Conv, opset 17)".
func (n *node) label() string {
	name := n.Name
	if name == "" && len(n.Outputs) > 0 {
		name = "-> " + n.Outputs[0]
	}
	return fmt.Sprintf("node %q (%s, opset %d)", name, n.Op, n.Opset)
}

// build turns a parsed model into a Model: it checks the opsets, converts
// the initializers, makes every node's kernel, sorts the nodes and folds
// what depends on initializers alone.
func build(mp *onnxpb.ModelProto, mem *memory) (*Model, error) {
	opset := -1
	for _, o := range mp.OpsetImport {
		if d := o.GetDomain(); d == "" || d == "ai.onnx" {
			opset = int(o.GetVersion())
		}
	}
	if opset < 0 && mp.GetIrVersion() < 3 && len(mp.OpsetImport) == 0 {
		opset = 1 // IR versions 1 and 2 had no opset_import: the first opset
	}
	switch {
	case opset < 0:
		return nil, errors.New("the model imports no opset of the default domain (ai.onnx)")
	case opset < MinOpset || opset > MaxOpset:
		return nil, fmt.Errorf("opset %d of the default domain: this runtime implements opsets %d to %d", opset, MinOpset, MaxOpset)
	}
	gp := mp.Graph
	stackSequences(gp) // a list a Loop appends to: a scan output (sequence.go)
	m := &Model{Opset: opset, IRVersion: mp.GetIrVersion(), Producer: strings.TrimSpace(mp.GetProducerName() + " " + mp.GetProducerVersion()), Name: gp.GetName()}
	if err := buildGraph(m, gp, opset, nil, mem, func() error { return checkOps(mp, opset) }); err != nil {
		return nil, err
	}
	return m, nil
}

// buildGraph builds m's graph from gp: a model's main graph (parent nil),
// or a subgraph (an If's branch, a Loop's or Scan's body) whose parent is
// the graph of the node that holds it. A subgraph may read the values of
// the graphs that enclose it (outer scope): those become inputs of its
// Model after its own (graph.outer), and the node that holds it reads
// them (subgraph.go). check, where not nil, runs once the inputs are read.
func buildGraph(m *Model, gp *onnxpb.GraphProto, opset int, parent *graph, mem *memory, check func() error) error {
	g := &graph{byName: map[string]int{}, proto: gp, parent: parent, mem: mem}
	m.g = g
	if len(gp.SparseInitializer) > 0 {
		return fmt.Errorf("sparse initializer %q: sparse tensors are not supported", gp.SparseInitializer[0].GetValues().GetName())
	}
	for i, t := range gp.Initializer {
		name := t.GetName()
		if name == "" {
			return fmt.Errorf("initializer %d has no name", i)
		}
		if _, dup := g.byName[name]; dup {
			return fmt.Errorf("initializer %q is defined twice", name)
		}
		a, err := ArrayOf(t, fmt.Sprintf("initializer %q", name))
		if err != nil {
			return fmt.Errorf("%s%w", readerOf(gp, name), err)
		}
		a = widen(a)
		g.add(&value{name: name, typ: a.Type, init: &a, input: -1})
	}
	for _, vi := range gp.Input {
		info, err := valueInfo(vi, "input")
		if parent != nil {
			info, err = subValueInfo(vi, "input")
		}
		if err != nil {
			return err
		}
		if _, isInit := g.byName[info.Name]; isInit {
			continue // an initializer listed as an input (IR < 4): a constant here
		}
		if id, dup := g.byName[info.Name]; dup && g.values[id].init == nil {
			return fmt.Errorf("input %q is declared twice", info.Name)
		}
		g.inputs = append(g.inputs, g.add(&value{name: info.Name, typ: internal(info.Type), input: len(m.Inputs)}))
		m.Inputs = append(m.Inputs, info)
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	for i, np := range gp.Node {
		n, err := newNode(np, opset, g)
		if err != nil {
			label := fmt.Sprintf("node %d", i)
			if np.GetName() != "" {
				label = fmt.Sprintf("node %q", np.GetName())
			}
			return fmt.Errorf("%s (%s, opset %d): %w", label, opDomain(np), opset, err)
		}
		g.nodes = append(g.nodes, n)
	}
	if err := g.resolve(m); err != nil {
		return err
	}
	for _, vi := range gp.Output {
		info, err := valueInfo(vi, "output")
		if parent != nil {
			info, err = subValueInfo(vi, "output")
		}
		if err != nil {
			return err
		}
		id, ok := g.byName[info.Name]
		if !ok && parent != nil {
			id, ok = g.outerValue(m, info.Name)
		}
		if !ok {
			return fmt.Errorf("output %q is not produced by any node, input or initializer", info.Name)
		}
		g.outputs = append(g.outputs, id)
		m.Outputs = append(m.Outputs, info)
	}
	if len(m.Outputs) == 0 {
		return errors.New("the graph has no outputs")
	}
	if err := g.sort(); err != nil {
		return err
	}
	if err := g.fold(mem); err != nil {
		return err
	}
	if err := g.checkConsts(); err != nil {
		return err
	}
	g.foldBatchNorm()
	g.proto, g.scope, g.mem = nil, nil, nil // the subgraphs are built: let the collector have the proto
	return nil
}

func opDomain(np *onnxpb.NodeProto) string {
	if d := np.GetDomain(); d != "" && d != "ai.onnx" {
		return d + "." + np.GetOpType()
	}
	return np.GetOpType()
}

// internal is the type a value of declared type t has in the runtime.
func internal(t nd.DType) nd.DType {
	if t == nd.Float16 || t == nd.BFloat16 {
		return nd.Float32
	}
	return t
}

func (g *graph) add(v *value) int {
	g.values = append(g.values, v)
	g.byName[v.name] = len(g.values) - 1
	return len(g.values) - 1
}

func valueInfo(vi *onnxpb.ValueInfoProto, what string) (ValueInfo, error) {
	info := ValueInfo{Name: vi.GetName()}
	if info.Name == "" {
		return info, fmt.Errorf("an %s has no name", what)
	}
	tt := vi.GetType().GetTensorType()
	if tt == nil {
		return info, fmt.Errorf("%s %q is not a tensor (sequences, maps and optionals are not supported)", what, info.Name)
	}
	info.Type = nd.DType(tt.GetElemType())
	if !info.Type.Supported() {
		name := onnxpb.TensorProto_DataType_name[tt.GetElemType()]
		return info, fmt.Errorf("%s %q: element type %s is not supported", what, info.Name, name)
	}
	if sh := tt.GetShape(); sh != nil {
		info.Shape = make([]Dim, len(sh.Dim))
		for i, d := range sh.Dim {
			info.Shape[i] = Dim{Size: -1, Param: d.GetDimParam()}
			if v, ok := d.Value.(*onnxpb.TensorShapeProto_Dimension_DimValue); ok && v.DimValue >= 0 {
				info.Shape[i] = Dim{Size: int(v.DimValue)}
			}
		}
	}
	return info, nil
}

// newNode makes a node's kernel. Its values are linked later (resolve):
// a node may name outputs of nodes listed after it.
func newNode(np *onnxpb.NodeProto, opset int, g *graph) (*node, error) {
	if d := np.GetDomain(); d != "" && d != "ai.onnx" {
		return nil, fmt.Errorf("operator %s of domain %q: only the default domain (ai.onnx) is supported", np.GetOpType(), d)
	}
	def, ok := lookupOp(np.GetOpType())
	if !ok {
		return nil, fmt.Errorf("operator %s is not supported (see Ops for the ones that are)", np.GetOpType())
	}
	since, ok := def.since(opset)
	if !ok {
		return nil, fmt.Errorf("operator %s does not exist in opset %d (it first appears in opset %d)", np.GetOpType(), opset, def.Versions[0])
	}
	attrs, err := newAttrs(np.Attribute)
	if err != nil {
		return nil, err
	}
	n := &node{Node: Node{Name: np.GetName(), Op: np.GetOpType(), Opset: opset, Since: since,
		Inputs: append([]string{}, np.Input...), Outputs: append([]string{}, np.Output...), Attrs: attrs}}
	for len(n.Inputs) > 0 && n.Inputs[len(n.Inputs)-1] == "" {
		n.Inputs = n.Inputs[:len(n.Inputs)-1] // trailing left-out inputs
	}
	if err := attrs.buildGraphs(opset, g); err != nil {
		return nil, err
	}
	n.kernel, err = def.New(&n.Node)
	if aerr := attrs.Err(); aerr != nil {
		return nil, aerr // the attribute's error explains New's
	}
	if err != nil {
		return nil, err
	}
	if extra := attrs.unread(); len(extra) > 0 {
		return nil, fmt.Errorf("attribute %s is not supported by this runtime's %s", strings.Join(extra, ", "), n.Op)
	}
	n.Inputs = append(n.Inputs, attrs.outerNames()...) // what its subgraphs read of this graph and those enclosing it
	return n, nil
}

// resolve links every node's inputs and outputs to values: each value is
// produced once, and every input is produced somewhere.
func (g *graph) resolve(m *Model) error {
	for _, n := range g.nodes {
		n.out = make([]int, len(n.Outputs))
		for i, name := range n.Outputs {
			n.out[i] = -1
			if name == "" {
				continue
			}
			if _, dup := g.byName[name]; dup {
				return fmt.Errorf("%s: value %q is produced twice (a graph must be in single assignment form)", n.label(), name)
			}
			n.out[i] = g.add(&value{name: name, input: -1})
		}
	}
	for _, n := range g.nodes {
		n.in = make([]int, len(n.Inputs))
		for i, name := range n.Inputs {
			n.in[i] = -1
			if name == "" {
				continue
			}
			id, ok := g.byName[name]
			if !ok && g.parent != nil {
				id, ok = g.outerValue(m, name)
			}
			if !ok {
				return fmt.Errorf("%s: input %q is not defined (no node, graph input or initializer makes it%s)", n.label(), name, g.scopeWords())
			}
			n.in[i] = id
		}
	}
	return nil
}

// sort orders the nodes so that each comes after those it reads from; a
// cycle is an error naming its nodes.
func (g *graph) sort() error {
	producer := make([]int, len(g.values))
	for i := range producer {
		producer[i] = -1
	}
	for i, n := range g.nodes {
		for _, o := range n.out {
			if o >= 0 {
				producer[o] = i
			}
		}
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(g.nodes))
	order := make([]*node, 0, len(g.nodes))
	// A depth-first search with a stack of its own: a chain of millions of
	// nodes must not grow the goroutine's stack past its limit (a fatal
	// error, not a panic).
	type frame struct{ node, next int } // next: the input to follow next
	var stack []frame
	for i := range g.nodes {
		if state[i] != unseen {
			continue
		}
		state[i] = visiting
		stack = append(stack[:0], frame{i, 0})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if ins := g.nodes[f.node].in; f.next < len(ins) {
				in := ins[f.next]
				f.next++
				if in < 0 || producer[in] < 0 {
					continue
				}
				switch j := producer[in]; state[j] {
				case unseen:
					state[j] = visiting
					stack = append(stack, frame{j, 0})
				case visiting:
					start := len(stack) - 1
					for stack[start].node != j {
						start--
					}
					var names []string
					for _, fr := range stack[start:] {
						names = append(names, g.nodes[fr.node].label())
					}
					return fmt.Errorf("the graph has a cycle: %s", strings.Join(names, " -> "))
				}
				continue
			}
			state[f.node] = done
			order = append(order, g.nodes[f.node])
			stack = stack[:len(stack)-1]
		}
	}
	g.nodes = order
	return nil
}

// maxFoldBytes bounds the outputs of a node folded at load.
const maxFoldBytes = 1 << 30

// fold computes, once, the nodes whose inputs are all known at load
// (initializers and the outputs of nodes folded before): their outputs
// become constants and the nodes go. Then the constants nothing reads are
// dropped.
func (g *graph) fold(mem *memory) error {
	kept := g.nodes[:0]
	for _, n := range g.nodes {
		if ok, err := g.foldNode(n, mem); err != nil {
			return err
		} else if !ok {
			kept = append(kept, n)
		}
	}
	g.nodes = kept
	g.dropUnused()
	return nil
}

// dropUnused drops the constants that no node reads and that are not
// outputs.
func (g *graph) dropUnused() {
	used := map[int]bool{}
	for _, n := range g.nodes {
		for _, in := range n.in {
			used[in] = true
		}
	}
	for _, o := range g.outputs {
		used[o] = true
	}
	for i, v := range g.values {
		if v.init != nil && !used[i] {
			v.init = nil // not needed: let the collector have it
			v.typ = nd.Undefined
		}
	}
}

func (g *graph) foldNode(n *node, mem *memory) (bool, error) {
	if _, nd := n.kernel.(Nondeterministic); nd {
		return false, nil
	}
	metas := make([]Meta, len(n.in))
	for i, id := range n.in {
		if id < 0 {
			continue
		}
		v := g.values[id]
		if v.init == nil {
			return false, nil
		}
		metas[i] = Meta{Type: v.init.Type, Shape: v.init.Shape, Value: v.init}
	}
	outs, err := infer(n, metas)
	if err != nil {
		return false, err
	}
	arrays, err := compute(n, metas, outs, maxFoldBytes, mem)
	if err != nil || arrays == nil {
		return false, err
	}
	for i, id := range n.out {
		if id >= 0 {
			a := arrays[i]
			g.values[id].init = &a
			g.values[id].typ = a.Type
			g.values[id].quant = quantizedOf(n, metas)
		}
	}
	return true, nil
}

// infer runs a kernel's Infer and checks what it returns.
func infer(n *node, in []Meta) ([]Meta, error) {
	out, err := n.kernel.Infer(in)
	if err != nil {
		if _, ok := isNeedValue(err); ok {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", n.label(), err)
	}
	if len(out) < len(n.out) {
		return nil, fmt.Errorf("%s: inferred %d outputs for %d", n.label(), len(out), len(n.out))
	}
	for i, o := range out[:len(n.out)] {
		if n.out[i] < 0 {
			continue
		}
		if !o.Type.Supported() {
			return nil, fmt.Errorf("%s: output %d: element type %v is not supported", n.label(), i, o.Type)
		}
		if _, err := nd.Numel(o.Shape); err != nil {
			return nil, fmt.Errorf("%s: output %d: %w", n.label(), i, err)
		}
		if o.Value != nil && (o.Value.Type != o.Type || !nd.SameShape(o.Value.Shape, o.Shape)) {
			return nil, fmt.Errorf("%s: output %d: value %v for %v", n.label(), i, o.Value, o)
		}
	}
	return out[:len(n.out)], nil
}

// compute computes a node whose inputs are all known, on the CPU, and
// returns its outputs; nil (no error) when they would take more than
// limit bytes.
func compute(n *node, in []Meta, out []Meta, limit int64, mem *memory) ([]nd.Array, error) {
	arrays := make([]nd.Array, len(out))
	var need int64
	for i, o := range out {
		if o.Value != nil || n.out[i] < 0 {
			continue
		}
		c, _ := nd.Numel(o.Shape)
		need += int64(c) * int64(o.Type.Size())
	}
	if need > limit || !mem.fits(need) { // left to the run, and its budget
		return nil, nil
	}
	ins := make([]nd.Array, len(in))
	for i, m := range in {
		if m.Value != nil {
			ins[i] = *m.Value
		}
	}
	views := map[int]int{}
	if v, ok := n.kernel.(Viewer); ok {
		for i := range out {
			if j, ok := v.View(i); ok {
				views[i] = j
			}
		}
	}
	for i, o := range out {
		switch {
		case n.out[i] < 0:
		case o.Value != nil:
			arrays[i] = *o.Value
		case hasKey(views, i):
			arrays[i] = nd.Array{Type: o.Type, Shape: o.Shape, Data: ins[views[i]].Data}
		default:
			a, err := mem.array(o.Type, o.Shape, n, func() string { return fmt.Sprintf("output %q", n.Outputs[i]) })
			if err != nil {
				return nil, err
			}
			arrays[i] = a
		}
	}
	if err := runKernel(n.kernel, mem, ins, arrays); err != nil {
		return nil, fmt.Errorf("%s: %w", n.label(), err)
	}
	return arrays, nil
}

func hasKey(m map[int]int, k int) bool { _, ok := m[k]; return ok }

func sortStrings(s []string) { sort.Strings(s) }

// readerOf names the first node of gp that reads the value name, as the
// start of an error about that value ("node \"dq\" (DequantizeLinear)
// input 2: "), so that a bad initializer (a zero point out of its type's
// range) names the node it is for; "" where no node reads it.
func readerOf(gp *onnxpb.GraphProto, name string) string {
	for i, np := range gp.Node {
		for j, in := range np.Input {
			if in == name {
				return fmt.Sprintf("%s (%s) input %d: ", nodeName(np, i), np.GetOpType(), j)
			}
		}
	}
	return ""
}
