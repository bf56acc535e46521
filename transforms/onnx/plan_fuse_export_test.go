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

// SetLayout turns the plans' blocked layout (plan_layout.go) on or off for
// the plans made after it, and returns the setting it replaced. Off, every
// convolution that the blocked kernel can compute is computed by it (on
// NCHW values), as a blocked plan computes it: the two plans' outputs are
// the same bits.
func SetLayout(on bool) bool {
	old := layoutSteps
	layoutSteps, nchwcForce = on, !on
	return old
}

// SetWinograd turns Winograd's F(2x2, 3x3) for the blocked 3x3
// convolutions on or off and returns the setting before.
func SetWinograd(on bool) bool {
	old := winoEnabled
	winoEnabled = on
	return old
}

// BlockedValues counts the values that plan p holds in the blocked layout.
func BlockedValues(p *Plan) int {
	n := 0
	for _, v := range p.vals {
		if v.blocked {
			n++
		}
	}
	return n
}

// BlockedKernel reports whether the blocked convolution kernel runs here
// (a vector kernel: the plans' blocked layout is made only then).
func BlockedKernel() bool { return nchwcWidth != 0 }

// SIMDWidths are the vector widths this CPU runs, widest first, 0 (plain
// Go) last.
func SIMDWidths() []int { return simdWidths() }

// SetNCHWcWidth makes the blocked convolution's kernels run at width
// (SIMDWidths; 0: no blocked kernel) and returns the width it replaced.
func SetNCHWcWidth(width int) int {
	old := nchwcWidth
	nchwcWidth = width
	return old
}

// SetBlockLoops turns the blocked layout's vector loops (blockSumVec,
// blockScaleVec) on or off, and returns the setting it replaced.
func SetBlockLoops(vector bool) bool {
	old := blockWidth != 0
	blockWidth = 0
	if vector {
		blockWidth = min(simdWidth, 8)
	}
	return old
}

// SetNCHWcTasks sets the tasks a core the blocked convolution's parallel
// loops want (0: a task an image always) and returns the value it replaced.
func SetNCHWcTasks(n int) int {
	old := nchwcTasks
	nchwcTasks = n
	return old
}

// SetNCHWcChunkBytes sets the bytes of weights that a blocked kernel call
// on narrow rows takes at most (nchwcChunkBytes) and returns the old value.
func SetNCHWcChunkBytes(n int) int {
	old := nchwcChunkBytes
	nchwcChunkBytes = n
	return old
}

// SetNCHWcPoolBandBytes sets the bytes of a pooled convolution's band of
// rows (nchwcPoolBandBytes) and returns the old value.
func SetNCHWcPoolBandBytes(n int) int {
	old := nchwcPoolBandBytes
	nchwcPoolBandBytes = n
	return old
}

// SetLayoutPoolBytes sets the smallest convolution's output that takes in
// its MaxPool (layoutPoolBytes) and returns the old value.
func SetLayoutPoolBytes(n int) int {
	old := layoutPoolBytes
	layoutPoolBytes = n
	return old
}

// Overwritten is the number of p's values that their step writes over one
// of its inputs (Overwriter).
func Overwritten(p *Plan) int {
	n := 0
	for _, v := range p.vals {
		if v.st != stView || v.by == nil {
			continue
		}
		if _, ok := v.by.kernel.(Overwriter); ok {
			n++
		}
	}
	return n
}
