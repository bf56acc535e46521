package onnx

import "fmt"

// constChecker is a Kernel that checks, when the model is loaded, those of
// its inputs that are constants then (initializers, and the values folded
// from them): the quantized operators' scales and zero points, so that a
// model with a zero scale is refused at load, naming the node, not on its
// first run. in holds a Meta with Value for each such input and the zero
// Meta for the others.
type constChecker interface {
	checkConsts(in []Meta) error
}

// checkConsts runs the constChecker kernels' checks on their constant
// inputs (after fold).
func (g *graph) checkConsts() error {
	for _, n := range g.nodes {
		c, ok := n.kernel.(constChecker)
		if !ok {
			continue
		}
		in := make([]Meta, len(n.in))
		for i, id := range n.in {
			if id >= 0 {
				if v := g.values[id].init; v != nil {
					in[i] = Meta{Type: v.Type, Shape: v.Shape, Value: v}
				}
			}
		}
		if err := c.checkConsts(in); err != nil {
			return fmt.Errorf("%s: %w", n.label(), err)
		}
	}
	return nil
}
