package onnx

// The launch of Mod and PRelu (ops_mod.go): the binary kernels of
// ops_elementwise.cu (float32, int64, int32).

func (k *ewExtra) Launch(d *Device, in, out []DevArray) error {
	bShape, _, err := k.shape(in[0].Shape, in[1].Shape)
	if err != nil {
		return err
	}
	return d.binary(k.op, in[0], in[1], out[0], in[0].Shape, bShape)
}
