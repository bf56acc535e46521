package onnx

// The launch of Transpose (ops_transpose.go): a strided copy.

func (k *transpose) Launch(d *Device, in, out []DevArray) error {
	c, err := k.copyPlan(in[0].Shape, out[0].Shape)
	if err != nil {
		return err
	}
	return d.copyStrided(out[0].Ptr, in[0].Ptr, in[0].Type.Size(), c)
}
