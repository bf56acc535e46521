package onnx

// Launch runs a fused MatMul (ops_matmul_fused.go): the products as
// MatMul's, then the bias, the residual and the activation in one kernel,
// conv_epilogue_f32, over the rows (each row's values a "channel" of the
// bias).
func (k *fusedMatMul) Launch(d *Device, in, out []DevArray) error {
	b, z := arrayOf(in, 2), arrayOf(in, 3)
	if !allFloat32(b, z) {
		return ErrOnHost
	}
	if err := k.mm.Launch(d, in[:2], out); err != nil {
		return err
	}
	y := out[0]
	if y.Len() == 0 {
		return nil
	}
	n := y.Shape[len(y.Shape)-1]
	if n == 0 {
		return nil
	}
	return k.ep.launch(d, y, b, z, y.Len()/n, n, 1)
}
