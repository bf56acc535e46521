package onnx

// The launch of Softmax and LogSoftmax (ops_softmax.go): softmax_f32, in
// ops_softmax.cu.

var kSoftmax = Module.Kernel("softmax_f32")

func (k *softmaxKernel) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	outer, n, inner, err := k.split(in[0].Shape)
	if err != nil {
		return err
	}
	return d.launch(kSoftmax, outer*inner, in[0].Ptr, out[0].Ptr, i64(outer), i64(n), i64(inner), int64(boolInt(k.log)))
}
