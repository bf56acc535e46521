package onnx

// The launches of LayerNormalization and inference-mode BatchNormalization
// (ops_norm.go): layernorm_f32 and batchnorm_f32, in ops_norm.cu.

var (
	kLayerNorm = Module.Kernel("layernorm_f32")
	kBatchNorm = Module.Kernel("batchnorm_f32")
)

func (k *layerNorm) Launch(d *Device, in, out []DevArray) error {
	x, scale, b := in[0], in[1], arrayOf(in, 2)
	if !allFloat32(x, scale, b) {
		return ErrOnHost
	}
	_, rows, size, err := k.shape(x.Shape, scale.Shape, b.Shape, b.Defined())
	if err != nil {
		return err
	}
	// The kernel takes Scale and B of the normalised shape itself.
	if scale.Len() != size || b.Defined() && b.Len() != size {
		return ErrOnHost
	}
	return d.launch(kLayerNorm, rows, x.Ptr, scale.Ptr, ptrOr0(b), out[0].Ptr, ptrOr0(arrayOf(out, 1)), ptrOr0(arrayOf(out, 2)),
		i64(rows), i64(size), k.epsilon)
}

func (k *batchNorm) Launch(d *Device, in, out []DevArray) error {
	if k.training || !allFloat32(in...) {
		return ErrOnHost
	}
	x := in[0]
	c, per, inner, err := k.shape(x.Shape, in[1].Shape, in[2].Shape, in[3].Shape, in[4].Shape)
	if err != nil {
		return err
	}
	if per != 1 {
		return ErrOnHost
	}
	return d.launch(kBatchNorm, x.Len(), x.Ptr, in[1].Ptr, in[2].Ptr, in[3].Ptr, in[4].Ptr, out[0].Ptr,
		i64(x.Shape[0]), i64(c), i64(inner), k.epsilon)
}
