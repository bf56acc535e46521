package onnx

// The launch of the unary math operators (ops_math.go) and of the
// activations that share their kernel (ops_activation.go): unary_f32, in
// ops_math.cu.

var kUnary = Module.Kernel("unary_f32")

func (k *ewUnary) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	n := in[0].Len()
	return d.launch(kUnary, n, int64(k.op), in[0].Ptr, out[0].Ptr, i64(n), float64(k.alpha), float64(k.beta))
}
