package onnx

// The launch of ArgMax and ArgMin (ops_argmax.go): argext_f32 (ops_argmax.cu)
// for float32 inputs; other types run on the host.

var kArgExt = Module.Kernel("argext_f32")

func (k *argExtKernel) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	outer, n, inner, err := k.split(in[0].Shape)
	if err != nil {
		return err
	}
	return d.launch(kArgExt, outer*inner, in[0].Ptr, out[0].Ptr, i64(outer), i64(n), i64(inner),
		int64(boolInt(k.isMin)), int64(boolInt(k.last)))
}
