package onnx

// The launch of Trilu (ops_trilu.go): trilu (ops_trilu.cu), elements of 1,
// 2, 4 or 8 bytes (k downloaded when the device computed it).

var kTrilu = Module.Kernel("trilu")

func (k *triluKernel) Launch(d *Device, in, out []DevArray) error {
	var kv []int64
	if kIn := arrayOf(in, 1); kIn.Defined() {
		var err error
		if kv, err = d.hostInts(kIn); err != nil {
			return err
		}
	}
	diag, err := k.diag(kv)
	if err != nil {
		return err
	}
	x := in[0]
	rows, cols := x.Shape[len(x.Shape)-2], x.Shape[len(x.Shape)-1]
	return d.launch(kTrilu, x.Len(), x.Ptr, out[0].Ptr, i64(x.Len()), i64(rows), i64(cols), i64(diag),
		int64(boolInt(k.upper)), i64(x.Type.Size()))
}
