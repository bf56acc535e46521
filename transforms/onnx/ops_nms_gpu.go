package onnx

// The launch of NonMaxSuppression (ops_nms.go): it is computed while
// planning (its inputs must be known), so a launch runs it on the host.

func (k *nmsKernel) Launch(*Device, []DevArray, []DevArray) error { return ErrOnHost }
