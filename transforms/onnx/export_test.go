package onnx

import "errors"

// PlacementWork is the number of lifetimes the planner looked at to place
// p's values in its workspace.
func PlacementWork(p *Plan) int { return p.overlaps }

// PlanSteps is the number of steps of p.
func PlanSteps(p *Plan) int { return len(p.steps) }

// HostOnlyOps returns the operators of m's nodes whose kernels have no
// device code for any inputs: no Launch, or a Launch that returns
// ErrOnHost without reading its arguments (one that reads them panics on
// the nil arguments given here, and is taken as device code).
func HostOnlyOps(m *Model) map[string]bool {
	out := map[string]bool{}
	for _, n := range m.g.nodes {
		out[n.Op] = out[n.Op] || hostOnly(n.kernel)
	}
	return out
}

func hostOnly(k Kernel) (host bool) {
	l, ok := k.(Launcher)
	if !ok {
		return true
	}
	defer func() {
		if recover() != nil {
			host = false
		}
	}()
	return errors.Is(l.Launch(nil, nil, nil), ErrOnHost)
}

// UseIntKernels turns the quantized products' integer kernels (igemm) on
// or off (the float32 kernels then), where the CPU has them, and returns
// a function that restores the setting.
func UseIntKernels(on bool) (restore func()) {
	saved := igWidth
	if !on {
		igWidth = 0
	}
	return func() { igWidth = saved }
}

// SubgraphInputs returns the input names of the subgraphs of m's nodes,
// by node output and attribute ("y/body").
func SubgraphInputs(m *Model) map[string][]string {
	out := map[string][]string{}
	for _, n := range m.g.nodes {
		for name, s := range n.Attrs.graphs {
			for _, in := range s.m.Inputs {
				out[n.Outputs[0]+"/"+name] = append(out[n.Outputs[0]+"/"+name], in.Name)
			}
		}
	}
	return out
}
