package onnx

// Launch runs a fused MatMul (ops_matmul_fused.go): the products as
// MatMul's, then the bias, the residual and the activation in one kernel,
// conv_epilogue_f32, over the rows (each row's values a "channel" of the
// bias), then LayerNormalization's kernel in place where it is fused.
func (k *fusedMatMul) Launch(d *Device, in, out []DevArray) error {
	b, z, lnScale, lnBias := arrayOf(in, 2), arrayOf(in, 3), arrayOf(in, 4), arrayOf(in, 5)
	if !allFloat32(b, z, lnScale, lnBias) {
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
	if err := k.ep.launch(d, y, b, z, y.Len()/n, n, 1); err != nil || k.ln == nil {
		return err
	}
	return k.ln.Launch(d, []DevArray{y, lnScale, lnBias}, []DevArray{y})
}

// Launch runs a fused Gemm: Gemm's own launch, then the residual and the
// activation in conv_epilogue_f32, then LayerNormalization's kernel in
// place where it is fused.
func (k *fusedGemm) Launch(d *Device, in, out []DevArray) error {
	z, lnScale, lnBias := arrayOf(in, 3), arrayOf(in, 4), arrayOf(in, 5)
	if !allFloat32(in[0], z, lnScale, lnBias) {
		return ErrOnHost
	}
	if err := k.g.Launch(d, in[:3], out); err != nil {
		return err
	}
	y := out[0]
	if y.Len() == 0 {
		return nil
	}
	n := y.Shape[len(y.Shape)-1]
	if err := k.ep.launch(d, y, DevArray{}, z, y.Len()/n, n, 1); err != nil || k.ln == nil {
		return err
	}
	return k.ln.Launch(d, []DevArray{y, lnScale, lnBias}, []DevArray{y})
}
