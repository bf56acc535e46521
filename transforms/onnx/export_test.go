package onnx

// PlacementWork is the number of lifetimes the planner looked at to place
// p's values in its workspace.
func PlacementWork(p *Plan) int { return p.overlaps }

// PlanSteps is the number of steps of p.
func PlanSteps(p *Plan) int { return len(p.steps) }

// GroupNorm21 is GroupNormalization-21's kernel (scale and bias per
// channel), for a test of the form while MaxOpset is below 21.
func GroupNorm21(groups int, epsilon float64) Kernel {
	return &groupNorm{name: "GroupNormalization", epsilon: epsilon, groups: groups, perChannel: true}
}
