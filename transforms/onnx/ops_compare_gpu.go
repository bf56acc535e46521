package onnx

// The launches of Where and Not (ops_compare.go): where_any and not_u8, in
// ops_compare.cu. Equal, Less and Greater are binary operators
// (ops_elementwise_gpu.go).

var (
	kWhere = Module.Kernel("where_any")
	kNot   = Module.Kernel("not_u8")
)

func (whereKernel) Launch(d *Device, in, out []DevArray) error {
	c, x, y, o := in[0], in[1], in[2], out[0]
	l := newEWLoop(o.Shape, c.Shape, x.Shape, y.Shape)
	args, ok := dims6([]any{o.Ptr, c.Ptr, x.Ptr, y.Ptr, i64(l.n), i64(x.Type.Size()), i64(len(l.dims))},
		l.dims, l.st[0], l.st[1], l.st[2])
	if !ok {
		return ErrOnHost
	}
	return d.launch(kWhere, l.n, args...)
}

func (notKernel) Launch(d *Device, in, out []DevArray) error {
	n := in[0].Len()
	return d.launch(kNot, n, in[0].Ptr, out[0].Ptr, i64(n))
}
