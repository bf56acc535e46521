package onnx

// The launch of ConvTranspose (ops_conv_transpose.go): per chunk of images
// and group, the columns W_g^T X_g as one cuBLAS batched product into the
// scratch memory, then col2im_f32 (ops_conv.cu), which gathers each output
// value from them and adds the bias.

var kCol2im = Module.Kernel("col2im_f32")

func (c *convTranspose) Launch(d *Device, in, out []DevArray) error {
	x, w, b, y := in[0], in[1], arrayOf(in, 2), out[0]
	if !allFloat32(x, w, b) {
		return ErrOnHost
	}
	g, m, err := c.geometry(x.Shape, w.Shape, b.Shape, b.Defined())
	if err != nil {
		return err
	}
	if y.Len() == 0 {
		return nil
	}
	n, ch := x.Shape[0], x.Shape[1]
	cg, mg := ch/c.group, m/c.group
	K, P, Q := g.kSize(), g.outSize(), g.inSize()
	if cg == 0 || P == 0 {
		return ErrOnHost // the bias alone
	}
	rows := mg * K
	// g is the adjoint convolution's: its in is Y's positions (Q), its out
	// X's (P); col2im_f32 takes X's as i and Y's as o.
	adj := g
	adj.in, adj.out = g.out, g.in
	chunk := max(1, min(n, convScratchBytes/(4*rows*P)))
	cols, err := d.scratch(int64(4 * chunk * rows * P))
	if err != nil {
		return err
	}
	for i0 := 0; i0 < n; i0 += chunk {
		nb := min(chunk, n-i0)
		for grp := range c.group {
			err := d.Call.GemmStridedBatched(true, false, rows, P, cg, at(w.Ptr, grp*cg*rows, 4), rows, 0,
				at(x.Ptr, (i0*ch+grp*cg)*P, 4), P, int64(ch*P), cols, P, int64(rows*P), nb)
			if err != nil {
				return err
			}
			var bias any = ptrOr0(b)
			if b.Defined() {
				bias = at(b.Ptr, grp*mg, 4)
			}
			args := geo3([]any{cols, at(y.Ptr, (i0*m+grp*mg)*Q, 4), bias, i64(nb), i64(m * Q), i64(rows * P), i64(mg)}, adj)
			if err := d.launch(kCol2im, nb*mg*Q, args...); err != nil {
				return err
			}
		}
	}
	return nil
}
