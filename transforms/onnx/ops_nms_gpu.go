package onnx

// The launch of NonMaxSuppression (ops_nms.go): a selection that is
// sequential per class and small beside the detector before it; it runs on
// the host inside the device call (its boxes come down, its selection goes
// up), where it is a step at all (not computed while planning or by
// RunShaped between plans).

func (k *nmsKernel) Launch(*Device, []DevArray, []DevArray) error { return ErrOnHost }
