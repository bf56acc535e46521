package onnx

// The launch of NonZero (ops_nonzero.go).

// Launch runs NonZero on the host: it is computed while planning unless the
// plan is refused, so a launch is never reached with unknown contents.
func (nonZeroKernel) Launch(*Device, []DevArray, []DevArray) error { return ErrOnHost }
