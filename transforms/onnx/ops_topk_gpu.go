package onnx

// The launch of TopK (ops_topk.go): topk_f32 (ops_topk.cu), one thread per
// element ranking it in its row, for float32 rows of up to topKDeviceLen
// values (the work grows with the square of the length); other inputs on
// the host.

var kTopK = Module.Kernel("topk_f32")

const topKDeviceLen = 1 << 15

func (t *topKKernel) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	outer, n, inner, k, err := t.plan(devMetas(in))
	if err != nil {
		return err
	}
	if n > topKDeviceLen {
		return ErrOnHost
	}
	if k == 0 {
		return nil
	}
	return d.launch(kTopK, outer*n*inner, in[0].Ptr, out[0].Ptr, out[1].Ptr, i64(outer), i64(n), i64(inner), i64(k),
		int64(boolInt(t.smallest)))
}
