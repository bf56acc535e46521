package onnx

// SetFusion turns the fusion of plans (plan_fuse.go) on or off for the
// plans made after it, and returns the setting it replaced.
func SetFusion(on bool) bool {
	old := fuseSteps
	fuseSteps = on
	return old
}

// StepOps lists the operators of a plan's steps, in order ("Conv+Add+Relu"
// for a fused one).
func (p *Plan) StepOps() []string {
	ops := make([]string, len(p.steps))
	for i, s := range p.steps {
		ops[i] = s.n.Op
	}
	return ops
}

// SetAttentionScratch sets the bound of a fused attention step's score
// buffer on the device, and returns the bound it replaced.
func SetAttentionScratch(bytes int) int {
	old := attentionScratchBytes
	attentionScratchBytes = bytes
	return old
}
