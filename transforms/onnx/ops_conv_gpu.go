package onnx

// The launch of Conv (ops_conv.go): cuBLAS products over im2col's columns
// (or over the input itself for a pointwise convolution), a kernel of its
// own for depthwise convolutions, and the bias (the kernels of ops_conv.cu).

var (
	kIm2col       = Module.Kernel("im2col_f32")
	kBiasChannels = Module.Kernel("bias_channels_f32")
	kConvDepth    = Module.Kernel("conv_depthwise_f32")
	kConvEpilogue = Module.Kernel("conv_epilogue_f32")
)

// convScratchBytes bounds the columns of one im2col pass: images go in
// chunks whose columns fit.
const convScratchBytes = 64 << 20

func (c *conv) Launch(d *Device, in, out []DevArray) error {
	return c.launch(d, in, out, nil, DevArray{})
}

// Launch runs a fused Conv (ops_conv_fused.go): the products as Conv's,
// then its bias, residual and activation in one kernel, conv_epilogue_f32.
func (k *fusedConv) Launch(d *Device, in, out []DevArray) error {
	var z DevArray
	if k.ep.residual {
		z = in[3]
		if !allFloat32(z) {
			return ErrOnHost
		}
	}
	return k.conv.launch(d, in[:3], out, k.ep, z)
}

// launch enqueues the convolution of in into out, with ep's epilogue (nil:
// none) and z its residual.
func (c *conv) launch(d *Device, in, out []DevArray, ep *epilogue, z DevArray) error {
	x, w, b, y := in[0], in[1], arrayOf(in, 2), out[0]
	if !allFloat32(x, w, b) {
		return ErrOnHost
	}
	geo, err := c.shapes(x.Shape, w.Shape, b.Shape, b.Defined())
	if err != nil {
		return err
	}
	n, ch, m, group := x.Shape[0], x.Shape[1], w.Shape[0], c.group
	os, is := geo.outSize(), geo.inSize()
	if ch == 0 || y.Len() == 0 {
		return ErrOnHost // the bias alone, or nothing
	}
	if ch/group == 1 && group > 1 && group == ch {
		args := geo3([]any{x.Ptr, w.Ptr, ptrOr0(b), y.Ptr, i64(n), i64(ch), i64(m / ch)}, geo)
		if err := d.launch(kConvDepth, y.Len(), args...); err != nil || ep == nil {
			return err
		}
		return ep.launch(d, y, DevArray{}, z, n, m, os) // the bias is added
	}
	cg, mg := ch/group, m/group
	kg := cg * geo.kSize()
	pointwise := geo.kSize() == 1 && geo.stride == [3]int{1, 1, 1} && geo.padLo == [3]int{} && geo.padHi == [3]int{}
	for g := range group {
		wg := at(w.Ptr, g*mg*kg, 4)
		if pointwise { // W_g times each image's channels of the group, as they lie
			err := d.Call.GemmStridedBatched(false, false, mg, os, kg, wg, kg, 0,
				at(x.Ptr, g*cg*is, 4), os, int64(ch*is), at(y.Ptr, g*mg*os, 4), os, int64(m*os), n)
			if err != nil {
				return err
			}
		}
	}
	if !pointwise {
		chunk := max(1, min(n, convScratchBytes/(4*max(1, kg*os))))
		cols, err := d.scratch(int64(4 * chunk * kg * os))
		if err != nil {
			return err
		}
		for i0 := 0; i0 < n; i0 += chunk {
			nb := min(chunk, n-i0)
			for g := range group {
				args := geo3([]any{at(x.Ptr, i0*ch*is+g*cg*is, 4), cols, i64(nb), i64(ch * is), i64(kg * os), i64(cg)}, geo)
				if err := d.launch(kIm2col, nb*kg*os, args...); err != nil {
					return err
				}
				err := d.Call.GemmStridedBatched(false, false, mg, os, kg, at(w.Ptr, g*mg*kg, 4), kg, 0,
					cols, os, int64(kg*os), at(y.Ptr, (i0*m+g*mg)*os, 4), os, int64(m*os), nb)
				if err != nil {
					return err
				}
			}
		}
	}
	if ep != nil {
		return ep.launch(d, y, b, z, n, m, os)
	}
	if b.Defined() {
		return d.launch(kBiasChannels, y.Len(), y.Ptr, b.Ptr, i64(n), i64(m), i64(os))
	}
	return nil
}

// launch enqueues conv_epilogue_f32 over y (n x m x os): the bias b (if
// defined), the residual z (if defined), the activation.
func (e *epilogue) launch(d *Device, y, b, z DevArray, n, m, os int) error {
	op, a, bb := int64(-1), 0.0, 0.0
	switch {
	case e.unary != nil:
		op, a, bb = int64(e.unary.op), float64(e.unary.alpha), float64(e.unary.beta)
	case e.clip:
		op, a, bb = -2, float64(e.lo), float64(e.hi)
	case e.silu:
		op = -7
	case e.gelu != nil:
		g := e.gelu
		op, a, bb = -3, float64(g.c), float64(g.half)
		if !g.div {
			op--
		}
		if g.halfFirst {
			op -= 2
		}
	}
	return d.launch(kConvEpilogue, y.Len(), y.Ptr, ptrOr0(b), ptrOr0(z), i64(n), i64(m), i64(os), op, a, bb)
}
