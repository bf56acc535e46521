package onnx

// The launch of NonZero (ops_nonzero.go): it runs on the host inside the
// device call where it is a step at all (not computed while planning or by
// RunShaped between plans).

func (nonZeroKernel) Launch(*Device, []DevArray, []DevArray) error { return ErrOnHost }
