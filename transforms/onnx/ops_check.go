package onnx

import (
	"fmt"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// A model is checked against the registry before any node's kernel is made:
// every operator it uses that the runtime lacks (an operator no file
// registers, one of another domain, one newer than the model's opset) is
// named in one error, with the first node that uses it and the opset, so
// that a user learns the whole list from one refused load rather than one
// operator per run.

// missingOp is an operator of a model that the runtime cannot run.
type missingOp struct {
	domain, op string
	// first names the first node that uses it; nodes counts them.
	first string
	nodes int
	// opset is the model's opset of the operator's domain (-1: the model
	// imports none); why is set when the operator is registered but not
	// at that opset.
	opset int
	why   string
}

func (o *missingOp) String() string {
	var b strings.Builder
	b.WriteString(o.op)
	if o.domain != "" {
		fmt.Fprintf(&b, " of domain %s", o.domain)
	}
	b.WriteString(" (" + o.first)
	if o.nodes > 1 {
		fmt.Fprintf(&b, " and %d more", o.nodes-1)
	}
	switch {
	case o.domain != "" && o.opset < 0:
		b.WriteString(", a domain the model imports no opset of")
	case o.domain != "":
		fmt.Fprintf(&b, ", domain opset %d", o.opset)
	default:
		fmt.Fprintf(&b, ", opset %d", o.opset)
	}
	if o.why != "" {
		b.WriteString(": " + o.why)
	}
	b.WriteString(")")
	return b.String()
}

// checkOps fails, naming each of them, if the model uses operators that
// are not registered at its opset (the default domain's, opset).
func checkOps(mp *onnxpb.ModelProto, opset int) error {
	imports := map[string]int{}
	for _, o := range mp.OpsetImport {
		imports[o.GetDomain()] = int(o.GetVersion())
	}
	var missing []*missingOp
	byKey := map[string]*missingOp{}
	for _, at := range graphNodes(mp.GetGraph(), "") {
		np := at.np
		domain := np.GetDomain()
		if domain == "ai.onnx" {
			domain = ""
		}
		o := &missingOp{domain: domain, op: np.GetOpType(), opset: opset}
		if domain != "" {
			o.opset = -1
			if v, ok := imports[domain]; ok {
				o.opset = v
			}
		} else if def, ok := lookupOp(o.op); ok {
			if _, ok := def.since(opset); ok {
				continue
			}
			o.why = fmt.Sprintf("it first appears in opset %d", def.Versions[0])
		}
		key := domain + "\x00" + o.op
		if seen := byKey[key]; seen != nil {
			seen.nodes++
			continue
		}
		o.first, o.nodes = at.name, 1
		byKey[key] = o
		missing = append(missing, o)
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("operator %v is not supported by this runtime (onnx.Ops lists those it runs; only the default domain, ai.onnx)", missing[0])
	}
	names := make([]string, len(missing))
	for i, o := range missing {
		names[i] = o.String()
	}
	return fmt.Errorf("%d operators of the model are not supported by this runtime (onnx.Ops lists those it runs; only the default domain, ai.onnx): %s",
		len(missing), strings.Join(names, ", "))
}

// nodeAt is a node of a model and its name in errors.
type nodeAt struct {
	np   *onnxpb.NodeProto
	name string
}

// graphNodes lists g's nodes and, after each, those of the subgraphs in
// its attributes (If's branches, Loop's and Scan's bodies), named with the
// node and attribute that hold them (in, "" for a model's graph).
func graphNodes(g *onnxpb.GraphProto, in string) []nodeAt {
	var out []nodeAt
	for i, np := range g.GetNode() {
		name := nodeName(np, i) + in
		out = append(out, nodeAt{np, name})
		for _, a := range np.GetAttribute() {
			if a.GetG() != nil {
				out = append(out, graphNodes(a.GetG(), fmt.Sprintf(" in %s's %s", name, a.GetName()))...)
			}
		}
	}
	return out
}

// nodeName names the i-th node of a graph in errors: its name, else its
// index and first output.
func nodeName(np *onnxpb.NodeProto, i int) string {
	if n := np.GetName(); n != "" {
		return fmt.Sprintf("node %q", n)
	}
	if len(np.Output) > 0 && np.Output[0] != "" {
		return fmt.Sprintf("node %d -> %q", i, np.Output[0])
	}
	return fmt.Sprintf("node %d", i)
}
