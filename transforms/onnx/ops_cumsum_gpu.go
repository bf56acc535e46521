package onnx

// The launch of CumSum (ops_cumsum.go): cumsum_f32 (ops_cumsum.cu) for
// float32 (its axis downloaded when the device computed it); other types
// on the host.

var kCumSum = Module.Kernel("cumsum_f32")

func (k *cumSumKernel) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	axis, err := d.hostInts(in[1])
	if err != nil {
		return err
	}
	outer, n, inner, err := k.split(in[0].Shape, axis)
	if err != nil {
		return err
	}
	return d.launch(kCumSum, outer*inner, in[0].Ptr, out[0].Ptr, i64(outer), i64(n), i64(inner),
		int64(boolInt(k.exclusive)), int64(boolInt(k.reverse)))
}
