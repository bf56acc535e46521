package onnx

// The launches of Concat and Split (ops_concat.go): a strided copy per input
// or output.

func (k *concat) Launch(d *Device, in, out []DevArray) error {
	o := out[0]
	axis, _ := NormAxis(int(k.axis), len(o.Shape))
	ost := Strides(o.Shape)
	off := 0
	for _, a := range in {
		err := d.copyStrided(o.Ptr, a.Ptr, o.Type.Size(),
			strided{shape: a.Shape, dstSt: ost, srcSt: Strides(a.Shape), dstOff: off * ost[axis]})
		if err != nil {
			return err
		}
		off += a.Shape[axis]
	}
	return nil
}

func (k *split) Launch(d *Device, in, out []DevArray) error {
	x := in[0]
	axis, _ := NormAxis(int(k.axis), len(x.Shape))
	metas, err := k.Infer(devMetas(in)) // the parts' shapes, left-out outputs' too
	if err != nil {
		return err
	}
	xst := Strides(x.Shape)
	off := 0
	for i, m := range metas {
		if i < len(out) && out[i].Defined() {
			err := d.copyStrided(out[i].Ptr, x.Ptr, x.Type.Size(),
				strided{shape: m.Shape, dstSt: Strides(m.Shape), srcSt: xst, srcOff: off * xst[axis]})
			if err != nil {
				return err
			}
		}
		off += m.Shape[axis]
	}
	return nil
}
