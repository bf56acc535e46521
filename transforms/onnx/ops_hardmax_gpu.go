package onnx

// The launch of Hardmax (ops_hardmax.go): hardmax_f32, in ops_hardmax.cu.

var kHardmax = Module.Kernel("hardmax_f32")

func (k *hardmax) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	outer, n, inner, err := k.rows.split(in[0].Shape)
	if err != nil {
		return err
	}
	return d.launch(kHardmax, outer*inner, in[0].Ptr, out[0].Ptr, i64(outer), i64(n), i64(inner))
}
