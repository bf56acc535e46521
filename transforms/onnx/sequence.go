package onnx

import (
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// The runtime holds tensors only. The one use of ONNX's sequences that
// exporters write into inference models is a Python list appended to in a
// loop, then stacked or concatenated after it; PyTorch writes
//
//	s0 = SequenceEmpty()
//	..., s = Loop(M, cond, ..., s0)      body: s_out = SequenceInsert(s_in, t)
//	y = ConcatFromSequence(s, axis, new_axis)
//
// which is a Loop scan output: the loader rewrites it so (stackSequences,
// before it checks the operators), the Loop giving the elements t of every
// iteration stacked on a new first axis under the sequence's name, which
// is how the runtime holds a sequence (ops_sequence.go). Other uses of
// sequences run as written: a sequence the Loop carries and inserts into
// grows each iteration, so the Loop's outputs' shapes depend on the data
// and its body is planned once per length, and the copies of an insert
// make a loop of n iterations take n^2 element copies; the rewrite takes
// the common case out of that.

// stackSequences rewrites, in g and its subgraphs, every sequence a Loop
// builds by appending to an empty one, and that only ConcatFromSequence,
// SequenceAt and SequenceLength read after the loop, into a scan output of
// the Loop.
func stackSequences(g *onnxpb.GraphProto) {
	for _, n := range g.Node {
		for _, a := range n.Attribute {
			if a.G != nil {
				stackSequences(a.G)
			}
		}
	}
	for {
		if !stackOne(g) {
			return
		}
	}
}

// stackOne rewrites one sequence of g (stackSequences), reporting whether
// it found one.
func stackOne(g *onnxpb.GraphProto) bool {
	reads := readers(g)
	outputs := map[string]bool{}
	for _, o := range g.Output {
		outputs[o.GetName()] = true
	}
	producer := map[string]int{}
	for i, n := range g.Node {
		for _, o := range n.Output {
			producer[o] = i
		}
	}
	for _, loop := range g.Node {
		if loop.GetOpType() != "Loop" || !defaultDomain(loop) {
			continue
		}
		body := nodeGraph(loop, "body")
		if body == nil || len(body.Input) != len(loop.Input) || len(loop.Input) < 2 {
			continue
		}
		carried := len(loop.Input) - 2
		for j := range carried {
			in, out := loop.Input[2+j], loop.Output[j]
			e, ok := producer[in]
			if !ok || in == "" || out == "" || g.Node[e].GetOpType() != "SequenceEmpty" || !defaultDomain(g.Node[e]) ||
				len(reads[in]) != 1 || outputs[out] || 1+j >= len(body.Output) {
				continue
			}
			sIn, sOut := body.Input[2+j].GetName(), body.Output[1+j].GetName()
			ins := bodyInsert(body, sIn, sOut)
			if ins < 0 || !onlySequenceReaders(reads[out]) {
				continue
			}
			t := body.Node[ins].Input[1]
			body.Node = append(body.Node[:ins:ins], body.Node[ins+1:]...)
			body.Input = append(body.Input[:2+j:2+j], body.Input[3+j:]...)
			body.Output = append(body.Output[:1+j:1+j], body.Output[2+j:]...)
			body.Output = append(body.Output, &onnxpb.ValueInfoProto{Name: &t})
			loop.Input = append(loop.Input[:2+j:2+j], loop.Input[3+j:]...)
			loop.Output = append(append(loop.Output[:j:j], loop.Output[j+1:]...), out)
			g.Node = append(g.Node[:e:e], g.Node[e+1:]...)
			return true
		}
	}
	return false
}

// bodyInsert returns the index of the body's one node that reads sIn, a
// SequenceInsert at the back (no position) that makes sOut, which no
// node of the body reads; -1 when the body does anything else with them.
func bodyInsert(body *onnxpb.GraphProto, sIn, sOut string) int {
	reads := readers(body)
	r := reads[sIn]
	if len(r) != 1 || len(reads[sOut]) != 0 || r[0].nested {
		return -1
	}
	n := body.Node[r[0].node]
	if n.GetOpType() != "SequenceInsert" || !defaultDomain(n) || len(n.Input) != 2 || n.Input[0] != sIn || n.Input[1] == sIn ||
		len(n.Output) != 1 || n.Output[0] != sOut {
		return -1
	}
	count := 0
	for _, o := range body.Output {
		if o.GetName() == sOut || o.GetName() == sIn {
			count++
		}
	}
	if count != 1 {
		return -1
	}
	return r[0].node
}

// onlySequenceReaders reports whether a sequence's readers are all
// ConcatFromSequence, SequenceAt or SequenceLength of its graph, reading
// it as their sequence.
func onlySequenceReaders(rs []reader) bool {
	for _, r := range rs {
		if r.nested || r.input != 0 {
			return false
		}
		switch r.op {
		case "ConcatFromSequence", "SequenceAt", "SequenceLength":
		default:
			return false
		}
	}
	return true
}

// reader is a node that reads a value: its index in the graph, the input
// that reads it, and whether it is a node of a subgraph of that node.
type reader struct {
	node, input int
	op          string
	nested      bool
}

// readers maps each name g's nodes read (their subgraphs' included, which
// read names of g through the node that holds them) to its readers.
func readers(g *onnxpb.GraphProto) map[string][]reader {
	out := map[string][]reader{}
	for i, n := range g.Node {
		for k, in := range n.Input {
			if in != "" {
				out[in] = append(out[in], reader{node: i, input: k, op: n.GetOpType()})
			}
		}
		for _, a := range n.Attribute {
			if a.G != nil {
				for name := range readers(a.G) {
					out[name] = append(out[name], reader{node: i, input: -1, op: n.GetOpType(), nested: true})
				}
			}
		}
	}
	return out
}

func defaultDomain(n *onnxpb.NodeProto) bool {
	return n.GetDomain() == "" || n.GetDomain() == "ai.onnx"
}

// nodeGraph returns node n's graph attribute name, nil if it has none.
func nodeGraph(n *onnxpb.NodeProto, name string) *onnxpb.GraphProto {
	for _, a := range n.Attribute {
		if a.GetName() == name {
			return a.G
		}
	}
	return nil
}
