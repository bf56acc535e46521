package onnx

// The launch of Einsum (ops_einsum.go): no device kernel yet; it runs on
// the host inside the device call.

func (k *einsumKernel) Launch(*Device, []DevArray, []DevArray) error { return ErrOnHost }
