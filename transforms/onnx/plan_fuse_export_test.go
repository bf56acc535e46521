package onnx

// SetFusion turns the fusion of plans (plan_fuse.go) on or off for the
// plans made after it, and returns the setting it replaced.
func SetFusion(on bool) bool {
	old := fuseSteps
	fuseSteps = on
	return old
}

// SetAttentionScratch sets the bound of a fused attention step's score
// buffer on the device, and returns the bound it replaced.
func SetAttentionScratch(bytes int) int {
	old := attentionScratchBytes
	attentionScratchBytes = bytes
	return old
}
