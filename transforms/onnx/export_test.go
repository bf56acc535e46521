package onnx

// PlacementWork is the number of lifetimes the planner looked at to place
// p's values in its workspace.
func PlacementWork(p *Plan) int { return p.overlaps }

// PlanSteps is the number of steps of p.
func PlanSteps(p *Plan) int { return len(p.steps) }
